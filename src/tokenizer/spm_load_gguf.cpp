// SentencePiece vocabulary from GGUF metadata (tokenizer.ggml.model = "llama").
#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/spm_tokenizer.h"

namespace triattn {

namespace {

std::optional<bool> bool_opt(const GgufFile& g, const std::string& key) {
  if (!g.has(key)) return std::nullopt;
  return g.get_bool(key);
}

int32_t spm_id_or(const GgufFile& g, const std::string& key, int64_t fallback) {
  const int64_t v = g.get_int_opt(key).value_or(fallback);
  if (v < -1 || v > INT32_MAX) fail(g.path(), ": ", key, " = ", v, " is not a valid token id");
  return static_cast<int32_t>(v);
}

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer_gguf(const GgufFile& g) {
  const std::string& path = g.path();
  SpmVocab v;
  v.source = path;
  if (!g.has("tokenizer.ggml.tokens")) {
    fail(path, ": metadata key 'tokenizer.ggml.tokens' missing (the file has no vocabulary)");
  }
  v.pieces = g.get_string_array("tokenizer.ggml.tokens");
  const size_t n = v.pieces.size();
  if (g.has("tokenizer.ggml.scores")) {
    const std::vector<double> s = g.get_float_array("tokenizer.ggml.scores");
    if (s.size() != n) {
      fail(path, ": tokenizer.ggml.scores has ", s.size(), " entries but tokenizer.ggml.tokens has ", n);
    }
    v.scores.assign(s.begin(), s.end());
  }
  if (g.has("tokenizer.ggml.token_type")) {
    const std::vector<int64_t> t = g.get_int_array("tokenizer.ggml.token_type");
    if (t.size() != n) {
      fail(path, ": tokenizer.ggml.token_type has ", t.size(), " entries but tokenizer.ggml.tokens has ", n);
    }
    v.types.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (t[i] < 0 || t[i] > 6) fail(path, ": token ", i, " has unknown token type ", t[i]);
      // 0 is "undefined" in llama.cpp; treat it as an ordinary piece.
      v.types[i] = t[i] == 0 ? TokenType::Normal : static_cast<TokenType>(t[i]);
    }
  }
  // Defaults are llama.cpp's for SPM vocabularies (<unk>=0, <s>=1, </s>=2).
  v.bos = spm_id_or(g, "tokenizer.ggml.bos_token_id", 1);
  v.eos = spm_id_or(g, "tokenizer.ggml.eos_token_id", 2);
  v.unk = spm_id_or(g, "tokenizer.ggml.unknown_token_id", 0);
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (g.has(key)) v.extra_eog.push_back(spm_id_or(g, key, -1));
  }
  if (g.has("tokenizer.ggml.eog_token_ids")) {
    for (int64_t id : g.get_int_array("tokenizer.ggml.eog_token_ids")) {
      if (id < 0 || id >= static_cast<int64_t>(n)) {
        fail(path, ": tokenizer.ggml.eog_token_ids holds ", id, ", outside the vocabulary of ", n);
      }
      v.extra_eog.push_back(static_cast<int32_t>(id));
    }
  }
  v.add_bos = bool_opt(g, "tokenizer.ggml.add_bos_token").value_or(true);
  v.space_prefix = bool_opt(g, "tokenizer.ggml.add_space_prefix").value_or(true)
                       ? SpacePrefix::EveryFragment
                       : SpacePrefix::Never;
  v.chat_template = g.get_string_opt("tokenizer.chat_template").value_or("");

  // Phi-3's special tokens swallow the whitespace after them (its tokenizer.json marks them
  // rstrip; GGUF has no field for it, so llama.cpp keys it on the model name too).
  std::string name = g.get_string_opt("general.name").value_or("");
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    if (v.types.empty()) v.types.assign(n, TokenType::Normal);
    for (size_t i = 0; i < n; ++i) {
      const TokenType t = v.types[i];
      if (t != TokenType::Control && t != TokenType::Unknown && t != TokenType::UserDefined) continue;
      const std::string& p = v.pieces[i];
      const bool rstrip = p != "<unk>" && p != "<s>" && p != "<|endoftext|>";
      v.specials.push_back({p, static_cast<int32_t>(i), t == TokenType::UserDefined, false, rstrip});
    }
  }
  return std::make_unique<SpmTokenizer>(std::move(v));
}

}  // namespace triattn
