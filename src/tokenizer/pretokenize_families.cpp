// Pre-tokenizer regex lists per GGUF `tokenizer.ggml.pre` name. The lists mirror what the
// models' own tokenizer.json files do (and what llama.cpp uses for the same names); the
// per-family notes say where they differ from plain GPT-2.
#include <initializer_list>

#include "tokenizer/pretokenize.h"

namespace triattn {

// GPT-2: contractions, optional-space letter/number/other runs, whitespace not followed by
// a non-space (so "  a" -> " ", " a"), then any whitespace left.
const char* const kGpt2PretokenizeRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// Llama 3 / tiktoken cl100k style: case-insensitive contractions, a letter run may take one
// leading non-letter, numbers in groups of up to 3 digits, newlines kept together.
const char* const kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: the Llama 3 pattern with single digits.
const char* const kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5 / Qwen3.6: Qwen2's pattern with combining marks (\p{M}) kept inside letter runs and
// out of punctuation runs, so scripts that write vowels as marks (Devanagari, Thai, ...)
// and decomposed accents stay whole words.
const char* const kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o / Llama 4 (o200k): case-aware letter runs, contractions attached to the word.
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Mistral Tekken: like GPT-4o without contractions, single digits.
const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek V3 / R1: 1-3 digit groups, CJK/kana runs split out, then a GPT-4o-like pattern.
const char* const kDeepseek3Main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek LLM (v1): newlines alone; a Latin/Greek/Cyrillic/... letter run with an optional
// leading space (explicit ranges, not \p{L}, so CJK stays out); ASCII + full-width
// punctuation runs; trailing whitespace; CJK/Hangul runs; digit runs.
const char* const kDeepseekLlmLetters =
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293"
    "\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C"
    "\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5"
    "\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77"
    "\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59"
    "\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC"
    "\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107"
    "\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139"
    "\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE"
    "\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E"
    "\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F"
    "\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2"
    "\U000118A0-\U000118DF\U0001E900-\U0001E943]+";
const char* const kDeepseekLlmPunct = "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+";
const char* const kCjkRuns = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+";

struct Entry {
  std::initializer_list<const char*> names;
  const char* family;
  std::initializer_list<const char*> regexes;
  bool ignore_merges;
  bool add_bos;
};

const Entry kFamilies[] = {
    // llama.cpp's fallback: punctuation runs split out first, then GPT-2, digit runs cut in 3s.
    {{"default"}, "default",
     {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2PretokenizeRegex, R"(\p{N}+)", "[0-9][0-9][0-9]"}, false, false},
    {{"gpt-2", "gpt2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
      "jina-v1-en", "jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais", "trillion", "exaone4",
      "granite-docling", "a.x-4.0", "mellum"},
     "gpt-2", {kGpt2PretokenizeRegex}, false, false},
    // Llama 3: the whole-piece rule matters (" Việt" is one token though merging by rank
    // would not reach it).
    {{"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
     "llama-bpe", {kLlama3}, true, true},
    {{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, "dbrx", {kLlama3}, false, false},
    {{"qwen2", "qwen2.5", "qwen-2.5", "deepseek-r1-qwen", "stablelm2", "megrez", "kormo", "hunyuan"},
     "qwen2", {kQwen2}, false, false},
    {{"qwen35"}, "qwen35", {kQwen35}, false, false},
    {{"deepseek-llm"}, "deepseek-llm",
     {"[\\r\\n]", kDeepseekLlmLetters, kDeepseekLlmPunct, "\\s+$", kCjkRuns, "\\p{N}+"}, false, false},
    {{"deepseek-coder"}, "deepseek-coder",
     {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjkRuns, "\\p{N}"}, false, false},
    {{"deepseek-v3", "hunyuan-dense"}, "deepseek-v3",
     {"\\p{N}{1,3}", "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+", kDeepseek3Main}, false, false},
    // Falcon: punctuation (incl. ASCII symbols) runs first, GPT-2, then digits in threes.
    {{"falcon"}, "falcon",
     {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2PretokenizeRegex, "[0-9][0-9][0-9]"}, false, false},
    // StarCoder family: every digit alone, then GPT-2.
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
     "starcoder", {"\\p{N}", kGpt2PretokenizeRegex}, false, false},
    {{"gpt-4o", "llama4", "minimax-m2"}, "gpt-4o", {kGpt4o}, false, false},
    {{"tekken"}, "tekken", {kTekken}, true, true},
    {{"poro-chat", "bloom", "gpt3-finnish"}, "bloom", {R"( ?[^(\s|.,!?…。，、।۔،)]+)"}, false, false},
    {{"viking"}, "viking", {R"( ?[^(\s|.,!?…。，、।۔،)]+)", "\\p{N}"}, false, false},
    {{"seed-coder"}, "seed-coder",
     {R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"},
     false, false},
};

}  // namespace

std::optional<PretokenizerFamily> pretokenizer_family(std::string_view pre_name) {
  if (pre_name.empty()) pre_name = "default";
  for (const auto& e : kFamilies) {
    for (const char* n : e.names) {
      if (pre_name == n) {
        PretokenizerFamily f;
        f.name = e.family;
        for (const char* r : e.regexes) f.regexes.emplace_back(r);
        f.ignore_merges = e.ignore_merges;
        f.add_bos_default = e.add_bos;
        return f;
      }
    }
  }
  return std::nullopt;
}

std::string pretokenizer_family_names() {
  std::string s;
  for (const auto& e : kFamilies) {
    for (const char* n : e.names) {
      if (!s.empty()) s += ", ";
      s += n;
    }
  }
  return s;
}

}  // namespace triattn
