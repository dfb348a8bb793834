#pragma once
// Finds added/special tokens in raw text: at each position the longest token text that
// starts there wins (HF's leftmost-longest rule). Control tokens only count when the
// caller asks for special-token parsing; user-defined ones always do.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace triattn {

class AddedTokenMatcher {
 public:
  void add(std::string_view text, int32_t id, bool control);
  bool empty() const { return terminal_.size() <= 1; }

  struct Match {
    int32_t id = -1;
    size_t len = 0;
  };
  // Longest allowed token starting at text[pos]; id -1 when none.
  Match match_at(std::string_view text, size_t pos, bool allow_control) const;
  // Quick filter: can any token start with this byte?
  bool may_start(uint8_t b) const { return first_byte_[b]; }

 private:
  struct Terminal {
    int32_t id = -1;
    bool control = false;
  };
  // Trie: edges keyed by (node << 8 | byte); node 0 is the root.
  std::unordered_map<uint64_t, uint32_t> edges_;
  std::vector<Terminal> terminal_{Terminal{}};
  std::array<bool, 256> first_byte_{};
};

}  // namespace triattn
