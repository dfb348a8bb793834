#pragma once
// Regex pre-tokenization for byte-level BPE: text is cut into pieces before merging, so
// merges never cross a word/number/punctuation boundary. A family is a list of regexes
// applied in sequence (the HF "Sequence of Split(Isolated)" / llama.cpp convention): each
// regex re-splits every piece of the previous step into its matches and the gaps between
// them, all kept. Lookaheads and `$` see only the piece being split. Uses PCRE2 (UTF + UCP,
// JIT when available) because \p{L}, \p{N}, \p{P} need Unicode properties.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace triattn {

class Pretokenizer {
 public:
  // Throws Error naming `what` and the offending regex when one does not compile.
  Pretokenizer(std::vector<std::string> regexes, const std::string& what);
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // Appends the pieces of `text` (views into it; their concatenation is `text`, none empty).
  // Invalid UTF-8 never matches a regex, so such bytes end up in gap pieces of their own.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  const std::vector<std::string>& regexes() const { return regexes_; }

 private:
  struct Compiled;
  std::vector<std::string> regexes_;
  std::vector<std::unique_ptr<Compiled>> compiled_;
};

// What llama.cpp associates with a GGUF `tokenizer.ggml.pre` name.
struct PretokenizerFamily {
  std::string name;                  // canonical family name
  std::vector<std::string> regexes;
  bool ignore_merges = false;        // a piece already in the vocabulary is emitted whole
  bool add_bos_default = false;      // BOS is prepended unless the file says otherwise
};

// nullopt for an unknown name. "default" (and an absent key) is llama.cpp's fallback list.
std::optional<PretokenizerFamily> pretokenizer_family(std::string_view pre_name);
// Names accepted by pretokenizer_family(), for error messages.
std::string pretokenizer_family_names();

// The GPT-2 ByteLevel regex (HF ByteLevel pre-tokenizer with use_regex = true).
extern const char* const kGpt2PretokenizeRegex;

}  // namespace triattn
