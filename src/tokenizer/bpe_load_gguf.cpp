// Byte-level BPE vocabularies embedded in GGUF files (tokenizer.ggml.model = "gpt2").
#include <cstdint>

#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pretokenize.h"

namespace triattn {
namespace {

// GGUF token_type values (llama.cpp's llama_token_type).
BpeTokenKind kind_from_gguf(int64_t t) {
  switch (t) {
    case 1: return BpeTokenKind::Normal;
    case 2: return BpeTokenKind::Unknown;
    case 3: return BpeTokenKind::Control;
    case 4: return BpeTokenKind::UserDefined;
    case 5: return BpeTokenKind::Unused;
    default: return BpeTokenKind::Normal;  // 0 (undefined) and 6 (byte) do not occur in gpt2 vocabularies
  }
}

int32_t bpe_id_or(const GgufFile& g, const char* key, int32_t dflt) {
  const auto v = g.get_int_opt(key);
  if (!v) return dflt;
  if (*v < 0 || *v > INT32_MAX) fail(g.path(), ": ", key, " = ", *v, " is not a token id");
  return int32_t(*v);
}

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer_gguf(const GgufFile& g) {
  BpeSpec spec;
  spec.source = g.path();
  spec.tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (g.has("tokenizer.ggml.token_type")) {
    const auto types = g.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != spec.tokens.size()) {
      fail(g.path(), ": tokenizer.ggml.token_type has ", types.size(), " entries for ", spec.tokens.size(), " tokens");
    }
    spec.kinds.reserve(types.size());
    for (auto t : types) spec.kinds.push_back(kind_from_gguf(t));
  }
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (spec.tokens[i].empty()) fail(g.path(), ": token ", i, " has empty text");
  }

  if (g.has("tokenizer.ggml.merges")) {
    const auto merges = g.get_string_array("tokenizer.ggml.merges");
    spec.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      const std::string& m = merges[i];
      const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
      if (sp == std::string::npos || sp + 1 >= m.size()) fail(g.path(), ": merge ", i, " '", m, "' is not 'left right'");
      spec.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
    }
  } else {
    // Vocabularies converted from tiktoken may come without merges: ids are ranks there.
    spec.merges_from_ranks = true;
  }

  const std::string pre = g.get_string_opt("tokenizer.ggml.pre").value_or("default");
  auto fam = pretokenizer_family(pre);
  if (!fam) {
    fail(g.path(), ": tokenizer.ggml.pre '", pre, "' is not a known pre-tokenizer (known: ",
         pretokenizer_family_names(), ")");
  }
  spec.pre_regexes = fam->regexes;
  spec.ignore_merges = fam->ignore_merges || spec.merges_from_ranks;

  spec.bos_id = bpe_id_or(g, "tokenizer.ggml.bos_token_id", -1);
  spec.eos_id = bpe_id_or(g, "tokenizer.ggml.eos_token_id", -1);
  spec.eot_id = bpe_id_or(g, "tokenizer.ggml.eot_token_id", -1);
  spec.eom_id = bpe_id_or(g, "tokenizer.ggml.eom_token_id", -1);
  spec.unk_id = bpe_id_or(g, "tokenizer.ggml.unknown_token_id", -1);
  const int32_t n = int32_t(spec.tokens.size());
  // Out-of-range ids are dropped rather than fatal: llama.cpp ignores them too.
  for (int32_t* id : {&spec.bos_id, &spec.eos_id, &spec.eot_id, &spec.eom_id, &spec.unk_id}) {
    if (*id >= n) *id = -1;
  }
  spec.add_bos = fam->add_bos_default;
  if (const GgufValue* v = g.find("tokenizer.ggml.add_bos_token")) spec.add_bos = v->as_bool();
  if (const GgufValue* v = g.find("tokenizer.ggml.add_space_prefix")) spec.add_prefix_space = v->as_bool();
  spec.chat_template = g.get_string_opt("tokenizer.chat_template").value_or("");
  return make_bpe_tokenizer(spec);
}

}  // namespace triattn
