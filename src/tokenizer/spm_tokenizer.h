#pragma once
// SentencePiece-style subword tokenizer (GGUF tokenizer.ggml.model = "llama", llama2.c
// tokNNN.bin, HF tokenizer.json with a "▁" normalizer and byte_fallback).
// Two merge rules share one vocabulary:
//  - score-driven (GGUF, llama2.c): start from UTF-8 characters, repeatedly merge the adjacent
//    pair whose concatenation is a vocabulary piece with the highest score (ties: leftmost);
//  - rank-driven (tokenizer.json): apply the BPE merge list by rank, as HF tokenizers does.
// Characters that no piece covers fall back to <0xNN> byte tokens, else to <unk>.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/special_split.h"
#include "tokenizer/tokenizer.h"

namespace triattn {

// SentencePiece's visible space, U+2581 "▁", which its vocabularies spell spaces with.
inline constexpr std::string_view kMetaSpace = "\xE2\x96\x81";

// Values match GGUF tokenizer.ggml.token_type.
enum class TokenType : uint8_t {
  Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

enum class SpacePrefix {
  Never,
  EveryFragment,  // each raw text fragment (llama.cpp after BOS/specials; HF Prepend normalizer)
  TextStart,      // only a fragment at the very start of the text (HF Metaspace "first")
};

struct SpmVocab {
  std::string source;  // file the vocabulary came from, for error messages
  std::vector<std::string> pieces;
  std::vector<float> scores;     // score-driven merging only
  std::vector<TokenType> types;
  int32_t bos = -1, eos = -1, unk = -1;
  std::vector<int32_t> extra_eog;  // EOT/EOM/... ids besides EOS
  bool add_bos = true;
  SpacePrefix space_prefix = SpacePrefix::EveryFragment;
  bool prefix_unless_leading_space = false;  // HF Metaspace: no prefix if text starts with ' '
  bool space_is_meta = true;  // pieces spell ' ' as U+2581 "▁" (llama2.c uses a plain space)
  bool split_words = false;   // HF Metaspace split=true: each ▁-word is merged on its own
  // Rank-driven BPE (tokenizer.json) when use_merges; merges[i] has rank i.
  bool use_merges = false;
  std::vector<std::pair<std::string, std::string>> merges;
  bool byte_fallback = true;
  bool fuse_unk = true;
  bool ignore_merges = false;
  // Special/added tokens matched in the text before merging. Empty: derived from types
  // (control and unknown with parse_special, user-defined always).
  std::vector<SpecialToken> specials;
  std::string chat_template;
};

class SpmTokenizer : public Tokenizer {
 public:
  // Validates the vocabulary (lengths, ids in range, merges known); throws Error naming source.
  explicit SpmTokenizer(SpmVocab vocab);

  std::vector<int32_t> encode(std::string_view text, bool add_bos,
                              bool parse_special = false) const override;
  std::string token_to_bytes(int32_t id, bool render_special = false) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(v_.pieces.size()); }
  std::string token_text(int32_t id) const override;
  TokenType token_type(int32_t id) const;

 private:
  void encode_fragment(std::string_view text, bool at_text_start, std::vector<int32_t>& out) const;
  void merge_by_score(std::string_view word, std::vector<int32_t>& out) const;
  void merge_by_rank(std::string_view word, std::vector<int32_t>& out) const;
  void push_bytes(std::string_view bytes, std::vector<int32_t>& out) const;
  void check_id(int32_t id) const;

  SpmVocab v_;
  std::unordered_map<std::string, int32_t> all_index_;    // every piece (HF char lookup)
  std::unordered_map<std::string, int32_t> merge_index_;  // pieces merging may produce
  int32_t byte_ids_[256];
  std::vector<int32_t> byte_values_;  // per id: the byte of a <0xNN> token, else -1
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merge_ranks_;  // ids -> rank, result
  std::vector<SpecialToken> specials_;
};

// Factories per source format (load.cpp dispatches to them).
std::unique_ptr<Tokenizer> make_spm_tokenizer_gguf(const GgufFile& gguf);
std::unique_ptr<Tokenizer> make_spm_tokenizer_llama2c(const std::string& tok_bin_path);
// tokenizer_json: the text of <dir>/tokenizer.json (model BPE, no ByteLevel).
std::unique_ptr<Tokenizer> make_spm_tokenizer_hf(const std::string& tokenizer_json,
                                                 const std::string& dir);

}  // namespace triattn
