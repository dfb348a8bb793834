#pragma once
// Byte-level BPE (GPT-2 family: Llama 3, Qwen2, DeepSeek, Falcon, StarCoder, ...).
//
// Encoding: added/special tokens are cut out of the raw text first (user-defined added
// tokens always, control tokens only with parse_special); each remaining stretch is split by
// the family's pre-tokenizer regexes; each piece is turned into byte tokens and merged by
// merge rank (lowest first, leftmost on ties). Families with the whole-piece rule
// (ignore_merges: Llama 3, Tekken, every tiktoken file) emit a piece that is itself a
// vocabulary entry as that one token without merging. Decoding concatenates token bytes.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace triattn {

// GGUF vocabularies with tokenizer.ggml.model == "gpt2".
std::unique_ptr<Tokenizer> make_bpe_tokenizer_gguf(const GgufFile& gguf);
// HF tokenizer.json whose model is BPE with a ByteLevel pre-tokenizer/decoder.
// tokenizer_json is the file's text; dir is where tokenizer_config.json may be.
std::unique_ptr<Tokenizer> make_bpe_tokenizer_hf(const std::string& tokenizer_json, const std::string& dir);
// vocab.json + merges.txt (+ tokenizer_config.json) directory; pre = pre-tokenizer name.
std::unique_ptr<Tokenizer> make_bpe_tokenizer_vocab_merges(const std::string& dir, const std::string& pre);
// tiktoken tokenizer.model (base64 rank lines), Llama 3 pre-tokenizer and specials.
// Specials come from a tokenizer_config.json next to the file when there is one (Llama 3.1+
// renamed some reserved tokens), else from the Llama 3 list.
std::unique_ptr<Tokenizer> make_bpe_tokenizer_tiktoken(const std::string& path);

// What a token is, with GGUF token_type semantics.
enum class BpeTokenKind : uint8_t {
  Normal,       // BPE vocabulary entry, stored in the GPT-2 byte alphabet
  Control,      // BOS/EOS/<|im_start|>...: matched only with parse_special, decodes to ""
  UserDefined,  // added non-special token: always matched, decodes to its raw text
  Unknown,      // treated like Control
  Unused,       // never produced by encode, decodes to ""
};

// Everything a loader extracts from a file; make_bpe_tokenizer() validates and builds.
struct BpeSpec {
  std::string source;  // named in error messages
  // Stored text per id: GPT-2 alphabet for Normal tokens, raw text for the others.
  std::vector<std::string> tokens;
  std::vector<BpeTokenKind> kinds;  // empty: all Normal
  // Merge list in stored form; the merge's rank is its index.
  std::vector<std::pair<std::string, std::string>> merges;
  // tiktoken files have no merge list: any adjacent pair whose concatenation is a token may
  // merge, ranked by that token's id.
  bool merges_from_ranks = false;
  bool ignore_merges = false;
  std::vector<std::string> pre_regexes;  // applied in sequence (see pretokenize.h)
  bool add_prefix_space = false;         // HF ByteLevel(add_prefix_space = true)
  std::vector<uint8_t> lstrip, rstrip;   // per id, optional: an added token eats whitespace
  int32_t bos_id = -1, eos_id = -1, eot_id = -1, eom_id = -1, unk_id = -1;
  std::vector<int32_t> extra_eog_ids;  // e.g. generation_config.json eos_token_id list
  bool add_bos = false;
  std::string chat_template;
};

// Throws Error (naming spec.source) for ids out of range, merges naming unknown tokens,
// regexes that do not compile.
std::unique_ptr<Tokenizer> make_bpe_tokenizer(const BpeSpec& spec);

}  // namespace triattn
