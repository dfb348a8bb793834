// SentencePiece-flavoured HF tokenizer.json: model BPE (merge list, byte_fallback) with the
// "▁" convention expressed either as normalizers (Prepend "▁" + Replace " " -> "▁", the
// Llama-2 style) or as a Metaspace pre-tokenizer. Anything else is refused with an Error
// rather than tokenized differently from the model's training.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/hf_tokenizer_config.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/vocab_limits.h"

namespace triattn {

namespace {

using nlohmann::json;


void apply_normalizer(const json& n, SpmVocab& v, const std::string& path) {
  if (n.is_null()) return;
  if (!n.is_object() || !n.contains("type") || !n["type"].is_string()) {
    fail(path, ": normalizer without a 'type'");
  }
  const std::string type = n["type"].get<std::string>();
  if (type == "Sequence") {
    const json& list = n.value("normalizers", json::array());
    if (!list.is_array()) fail(path, ": normalizer Sequence without a 'normalizers' array");
    for (const json& m : list) apply_normalizer(m, v, path);
  } else if (type == "Prepend") {
    if (n.value("prepend", "") != kMetaSpace) fail(path, ": unsupported Prepend normalizer (only \"▁\")");
    v.space_prefix = SpacePrefix::EveryFragment;
  } else if (type == "Replace") {
    const json& pat = n.value("pattern", json::object());
    if (!pat.is_object() || pat.value("String", "") != " " || n.value("content", "") != kMetaSpace) {
      fail(path, ": unsupported Replace normalizer (only ' ' -> \"▁\")");
    }
    v.space_is_meta = true;
  } else {
    fail(path, ": unsupported normalizer type '", type, "' for a SentencePiece-style BPE");
  }
}

void apply_pre_tokenizer(const json& p, SpmVocab& v, const std::string& path) {
  if (p.is_null()) return;
  if (!p.is_object() || !p.contains("type") || !p["type"].is_string()) {
    fail(path, ": pre_tokenizer without a 'type'");
  }
  const std::string type = p["type"].get<std::string>();
  if (type == "Sequence") {
    const json& list = p.value("pretokenizers", json::array());
    if (!list.is_array()) fail(path, ": pre_tokenizer Sequence without a 'pretokenizers' array");
    for (const json& m : list) apply_pre_tokenizer(m, v, path);
    return;
  }
  if (type != "Metaspace") {
    fail(path, ": unsupported pre_tokenizer type '", type, "' for a SentencePiece-style BPE");
  }
  if (p.value("replacement", std::string(kMetaSpace)) != kMetaSpace) {
    fail(path, ": Metaspace replacement other than \"▁\" is not supported");
  }
  v.space_is_meta = true;
  v.prefix_unless_leading_space = true;
  v.split_words = p.value("split", true);
  std::string scheme = "always";
  if (p.contains("prepend_scheme") && p["prepend_scheme"].is_string()) {
    scheme = p["prepend_scheme"].get<std::string>();
  } else if (p.contains("add_prefix_space") && p["add_prefix_space"].is_boolean()) {
    scheme = p["add_prefix_space"].get<bool>() ? "always" : "never";
  }
  if (scheme == "always") v.space_prefix = SpacePrefix::EveryFragment;
  else if (scheme == "first") v.space_prefix = SpacePrefix::TextStart;
  else if (scheme == "never") v.space_prefix = SpacePrefix::Never;
  else fail(path, ": unknown Metaspace prepend_scheme '", scheme, "'");
}

// Merges are "a b" strings (older files) or ["a", "b"] pairs (newer ones).
std::pair<std::string, std::string> parse_merge(const json& m, size_t i, const std::string& path) {
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const size_t sp = s.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos) {
      fail(path, ": merge #", i, " '", s, "' is not two space-separated pieces");
    }
    return {s.substr(0, sp), s.substr(sp + 1)};
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    return {m[0].get<std::string>(), m[1].get<std::string>()};
  }
  fail(path, ": merge #", i, " is neither \"a b\" nor [\"a\", \"b\"]");
}

int32_t find_piece(const SpmVocab& v, const std::string& text) {
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    if (v.pieces[i] == text) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer_hf(const std::string& tokenizer_json,
                                                 const std::string& dir) {
  const std::string path = dir + "/tokenizer.json";
  json j;
  try {
    j = json::parse(tokenizer_json);
  } catch (const json::exception& e) {
    fail(path, ": invalid JSON: ", e.what());
  }
  // A field of the wrong type (`"byte_fallback": "yes"`) raises the JSON library's
  // type_error, which names no file: it becomes a named error here.
  SpmVocab v;
  int32_t template_bos = -1;  // the post-processor's first special token, when it has one
  try {
    if (!j.is_object()) fail(path, ": expected a JSON object");
    auto mit = j.find("model");
    if (mit == j.end() || !mit->is_object()) fail(path, ": missing 'model' object");
    const json& model = *mit;
    const std::string mtype = model.value("type", "");
    if (mtype != "BPE") fail(path, ": model type '", mtype, "' is not supported (only BPE)");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (model.contains(key) && !model[key].is_null() && model[key] != "") {
        fail(path, ": BPE option '", key, "' is not supported");
      }
    }
    auto vit = model.find("vocab");
    if (vit == model.end() || !vit->is_object()) fail(path, ": model has no 'vocab' object");

    v.source = path;
    v.use_merges = true;
    v.space_is_meta = false;
    v.space_prefix = SpacePrefix::Never;
    v.byte_fallback = model.value("byte_fallback", false);
    v.fuse_unk = model.value("fuse_unk", false);
    v.ignore_merges = model.value("ignore_merges", false);

    const json& added = j.value("added_tokens", json::array());
    if (!added.is_array()) fail(path, ": 'added_tokens' is not an array");

    // Token ids may come from the model vocab or from added_tokens; any id may be missing, but
    // no more than kMaxVocabHoles of them.
    const int64_t n_listed = static_cast<int64_t>(vit->size() + added.size());
    auto place = [&](const std::string& text, const json& idj) -> int32_t {
      if (!idj.is_number_integer()) fail(path, ": token '", text, "' has a non-integer id");
      const int64_t id = idj.get<int64_t>();
      if (id < 0 || id >= n_listed + kMaxVocabHoles) {
        fail(path, ": token '", text, "' has id ", id, ", out of range for ", n_listed, " tokens (ids may run ",
             kMaxVocabHoles, " past the count)");
      }
      if (static_cast<size_t>(id) >= v.pieces.size()) {
        v.pieces.resize(id + 1);
        v.types.resize(id + 1, TokenType::Unused);
      }
      v.pieces[id] = text;
      v.types[id] = TokenType::Normal;
      return static_cast<int32_t>(id);
    };
    for (auto it = vit->begin(); it != vit->end(); ++it) place(it.key(), it.value());

    for (const json& a : added) {
      if (!a.is_object() || !a.contains("content") || !a["content"].is_string() || !a.contains("id")) {
        fail(path, ": an added_tokens entry lacks 'id' or 'content'");
      }
      const std::string text = a["content"].get<std::string>();
      const int32_t id = place(text, a["id"]);
      const bool special = a.value("special", false);
      v.types[id] = special ? TokenType::Control : TokenType::UserDefined;
      v.specials.push_back({text, id, !special, a.value("lstrip", false), a.value("rstrip", false)});
    }

    const json& merges = model.value("merges", json::array());
    if (!merges.is_array()) fail(path, ": model 'merges' is not an array");
    v.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) v.merges.push_back(parse_merge(merges[i], i, path));

    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      const std::string unk = model["unk_token"].get<std::string>();
      v.unk = find_piece(v, unk);
      if (v.unk < 0) fail(path, ": unk_token '", unk, "' is not in the vocabulary");
      if (v.types[v.unk] == TokenType::Normal) v.types[v.unk] = TokenType::Unknown;
    }
    apply_normalizer(j.value("normalizer", json()), v, path);
    apply_pre_tokenizer(j.value("pre_tokenizer", json()), v, path);

    const json& pp = j.value("post_processor", json());
    if (pp.is_object() && pp.value("type", "") == "TemplateProcessing") {
      const json& single = pp.value("single", json::array());
      if (single.is_array() && !single.empty() && single[0].is_object() && single[0].contains("SpecialToken")) {
        const json& st = single[0]["SpecialToken"];
        if (st.is_object() && st.contains("id") && st["id"].is_string()) {
          template_bos = find_piece(v, st["id"].get<std::string>());
        }
      }
    }
  } catch (const json::exception& e) {
    fail(path, ": unexpected structure: ", e.what());
  }

  // BOS/EOS: tokenizer_config.json when present, else the post-processor's template.
  const HfTokenizerConfig cfg = read_hf_tokenizer_config(dir);
  const std::string cfg_path = dir + "/tokenizer_config.json";
  auto lookup_cfg = [&](const std::optional<std::string>& text, const char* what) -> int32_t {
    if (!text) return -1;
    const int32_t id = find_piece(v, *text);
    if (id < 0) fail(cfg_path, ": ", what, " '", *text, "' is not in the vocabulary of ", path);
    return id;
  };
  v.bos = lookup_cfg(cfg.bos_token, "bos_token");
  v.eos = lookup_cfg(cfg.eos_token, "eos_token");
  const bool template_adds_bos = template_bos >= 0;
  if (v.bos < 0) v.bos = template_bos;
  v.add_bos = cfg.add_bos_token.value_or(template_adds_bos);
  if (v.eos < 0) v.eos = find_piece(v, "</s>");
  for (int32_t id : cfg.generation_eos_ids) {
    if (id < 0 || static_cast<size_t>(id) >= v.pieces.size()) {
      fail(dir, "/generation_config.json: eos_token_id ", id, " is outside the vocabulary of ",
           v.pieces.size(), " tokens");
    }
    v.extra_eog.push_back(id);
  }
  v.chat_template = cfg.chat_template;
  return std::make_unique<SpmTokenizer>(std::move(v));
}

}  // namespace triattn
