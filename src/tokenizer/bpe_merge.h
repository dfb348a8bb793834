#pragma once
// The merge engine of byte-level BPE: raw bytes of one pre-token in, token ids out.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace triattn {

class BpeMerger {
 public:
  // bytes_of[id] = raw bytes of token id; usable[id] = may take part in BPE (Normal tokens).
  // Pairs are added afterwards with add_merge / add_merges_from_ranks.
  BpeMerger(const std::vector<std::string>& bytes_of, const std::vector<bool>& usable,
            bool ignore_merges, int32_t unk_id);

  // Registers "left + right -> result" with the given rank; the first registration of a
  // pair wins. Returns false when left, right or left+right is not a usable token.
  bool add_merge(std::string_view left, std::string_view right, int32_t rank);
  // tiktoken: every split of every usable token into two usable tokens is a merge ranked
  // by the token's id.
  void add_merges_from_ranks(const std::vector<std::string>& bytes_of);

  // Appends the ids for one pre-token.
  void encode(std::string_view bytes, std::vector<int32_t>& out) const;

  int32_t find(std::string_view bytes) const;  // usable token with exactly these bytes, or -1

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  const Merge* lookup(int32_t a, int32_t b) const;

  // Transparent hashing lets lookups take string_views without building strings.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;  // bytes -> id, usable tokens
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_id_{};
  bool ignore_merges_ = false;
  int32_t unk_id_ = -1;
};

}  // namespace triattn
