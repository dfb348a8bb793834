// Byte-level BPE from Hugging Face files: tokenizer.json, or the older vocab.json +
// merges.txt pair. tokenizer_config.json (when present) supplies BOS/EOS, add_bos_token and
// the chat template.
#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/bpe_hf_config.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab_limits.h"
#include "core/read_file.h"

namespace triattn {

using nlohmann::json;

namespace {

// "a b" -> (a, b). The split is at the first space after the first character, so a
// first token that is itself " " would still parse (byte-level files never have one).
bool split_merge_line(std::string_view line, std::pair<std::string, std::string>& out) {
  if (line.size() < 3) return false;
  const size_t sp = line.find(' ', 1);
  if (sp == std::string_view::npos || sp + 1 >= line.size()) return false;
  if (line.find(' ', sp + 1) != std::string_view::npos) return false;
  out = {std::string(line.substr(0, sp)), std::string(line.substr(sp + 1))};
  return true;
}

// Fills spec.tokens from a {"text": id} object (HF vocab). Ids may have holes (added tokens
// or nothing fill them later); they may not repeat.
void read_vocab_object(const json& vocab, BpeSpec& spec, const std::string& where) {
  if (!vocab.is_object()) fail(where, ": vocab is not an object");
  int64_t max_id = -1;
  for (const auto& [text, idv] : vocab.items()) {
    if (!idv.is_number_integer()) fail(where, ": id of token '", text, "' is not an integer");
    const auto id = idv.get<int64_t>();
    if (id < 0 || id >= int64_t(vocab.size()) + kMaxVocabHoles) {
      fail(where, ": token '", text, "' has id ", id, ", out of range for ", vocab.size(), " tokens (ids may run ",
           kMaxVocabHoles, " past the count)");
    }
    max_id = std::max(max_id, id);
  }
  std::vector<std::string> tokens(size_t(max_id + 1));
  std::vector<bool> seen(tokens.size());
  for (const auto& [text, idv] : vocab.items()) {
    const auto id = idv.get<int64_t>();
    if (seen[id]) fail(where, ": id ", id, " is used twice");
    if (text.empty()) fail(where, ": token ", id, " has empty text");
    seen[id] = true;
    tokens[id] = text;
  }
  spec.tokens = std::move(tokens);
  spec.kinds.assign(spec.tokens.size(), BpeTokenKind::Normal);
}

// Regex text matching `s` literally.
std::string regex_literal(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) r += '\\';
    r += c;
  }
  return r;
}

// Walks an HF pre_tokenizer, collecting the regex sequence. byte_level is set when a
// ByteLevel step is present.
void collect_pretokenizer(const json& p, BpeSpec& spec, bool& byte_level, const std::string& where) {
  if (p.is_null()) return;
  const std::string type = p.value("type", "");
  if (type == "Sequence") {
    for (const auto& sub : p.at("pretokenizers")) collect_pretokenizer(sub, spec, byte_level, where);
  } else if (type == "ByteLevel") {
    byte_level = true;
    if (p.value("add_prefix_space", false)) spec.add_prefix_space = true;
    if (p.value("use_regex", true)) spec.pre_regexes.emplace_back(kGpt2PretokenizeRegex);
  } else if (type == "Split") {
    const std::string behavior = p.value("behavior", "Isolated");
    if (behavior != "Isolated") fail(where, ": Split pre-tokenizer behavior '", behavior, "' is not supported (only Isolated)");
    if (p.value("invert", false)) fail(where, ": inverted Split pre-tokenizer is not supported");
    const json& pat = p.at("pattern");
    if (pat.contains("Regex")) {
      spec.pre_regexes.push_back(pat["Regex"].get<std::string>());
    } else if (pat.contains("String")) {
      spec.pre_regexes.push_back(regex_literal(pat["String"].get<std::string>()));
    } else {
      fail(where, ": Split pattern is neither Regex nor String");
    }
  } else if (type == "Digits") {
    spec.pre_regexes.emplace_back(p.value("individual_digits", false) ? "\\p{N}" : "\\p{N}+");
  } else if (type == "Punctuation") {
    // HF counts ASCII symbols ($+<=>^`|~) as punctuation too.
    const bool isolated = p.value("behavior", "Isolated") == "Isolated";
    spec.pre_regexes.emplace_back(isolated ? R"([\p{P}\$\+<=>\^~\|`])" : R"([\p{P}\$\+<=>\^~\|`]+)");
  } else {
    fail(where, ": pre-tokenizer '", type, "' is not supported for byte-level BPE");
  }
}

bool mentions_byte_level(const json& j) {
  if (j.is_object()) {
    if (j.value("type", "") == "ByteLevel") return true;
    for (const auto& [k, v] : j.items()) {
      if (mentions_byte_level(v)) return true;
    }
  } else if (j.is_array()) {
    for (const auto& v : j) {
      if (mentions_byte_level(v)) return true;
    }
  }
  return false;
}

// Normalizers change the text before splitting. NFC is accepted (text is normally NFC
// already; this tokenizer does not renormalize); anything else would change results.
void check_normalizer(const json& n, const std::string& where) {
  if (n.is_null()) return;
  const std::string type = n.value("type", "");
  if (type == "NFC") return;
  if (type == "Sequence") {
    for (const auto& sub : n.at("normalizers")) check_normalizer(sub, where);
    return;
  }
  fail(where, ": normalizer '", type, "' is not supported for byte-level BPE");
}

// Does the post-processor put a special token before the text? Returns its text.
std::optional<std::string> template_prefix_token(const json& pp) {
  if (pp.is_null()) return std::nullopt;
  const std::string type = pp.value("type", "");
  if (type == "Sequence") {
    for (const auto& sub : pp.at("processors")) {
      if (auto t = template_prefix_token(sub)) return t;
    }
  } else if (type == "TemplateProcessing") {
    const json& single = pp.at("single");
    if (single.is_array() && !single.empty() && single[0].contains("SpecialToken")) {
      return single[0]["SpecialToken"].at("id").get<std::string>();
    }
  }
  return std::nullopt;
}

// vocab.json + merges.txt directories do not name their pre-tokenizer; the tokenizer class
// in tokenizer_config.json does imply it.
std::string family_from_class(const std::string& cls) {
  if (cls.starts_with("Qwen3_5")) return "qwen35";  // transformers' Qwen3_5Tokenizer (3.5 and 3.6)
  if (cls.starts_with("Qwen2")) return "qwen2";
  if (cls.starts_with("GPT2") || cls.starts_with("CodeGen") || cls.starts_with("Roberta")) return "gpt-2";
  return "default";
}

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer_hf(const std::string& tokenizer_json, const std::string& dir) {
  const std::string where = dir.empty() ? std::string("tokenizer.json")
                                        : (std::filesystem::path(dir) / "tokenizer.json").string();
  json j;
  try {
    j = json::parse(tokenizer_json);
  } catch (const json::exception& e) {
    fail(where, ": invalid JSON: ", e.what());
  }
  BpeSpec spec;
  spec.source = where;
  std::optional<std::string> prefix_token;
  try {
    if (!j.is_object()) fail(where, ": top level is not an object");
    const json& model = j.at("model");
    const std::string mtype = model.value("type", "BPE");
    if (mtype != "BPE") fail(where, ": model type '", mtype, "' is not BPE");
    read_vocab_object(model.at("vocab"), spec, where);
    for (const auto& m : model.at("merges")) {
      std::pair<std::string, std::string> pr;
      if (m.is_string()) {
        if (!split_merge_line(m.get<std::string>(), pr)) fail(where, ": bad merge '", m.get<std::string>(), "'");
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        pr = {m[0].get<std::string>(), m[1].get<std::string>()};
      } else {
        fail(where, ": merge ", spec.merges.size(), " is neither \"a b\" nor [a, b]");
      }
      spec.merges.push_back(std::move(pr));
    }
    spec.ignore_merges = model.value("ignore_merges", false);
    if (auto it = model.find("unk_token"); it != model.end() && it->is_string()) {
      spec.unk_id = find_token_id(spec, it->get<std::string>());
    }

    std::vector<BpeAddedToken> added;
    if (auto it = j.find("added_tokens"); it != j.end() && it->is_array()) {
      for (const auto& t : *it) {
        BpeAddedToken a;
        a.id = t.at("id").get<int32_t>();
        a.content = t.at("content").get<std::string>();
        a.special = t.value("special", false);
        a.lstrip = t.value("lstrip", false);
        a.rstrip = t.value("rstrip", false);
        added.push_back(std::move(a));
      }
    }
    apply_added_tokens(spec, added);

    bool byte_level = false;
    if (auto it = j.find("normalizer"); it != j.end()) check_normalizer(*it, where);
    if (auto it = j.find("pre_tokenizer"); it != j.end()) collect_pretokenizer(*it, spec, byte_level, where);
    if (!byte_level && !mentions_byte_level(j.value("decoder", json()))) {
      fail(where, ": not a byte-level BPE tokenizer (no ByteLevel pre-tokenizer or decoder)");
    }
    // A ByteLevel step without a regex and nothing else: the whole text is one piece.
    if (spec.pre_regexes.empty()) spec.pre_regexes.emplace_back("[\\s\\S]+");
    if (auto it = j.find("post_processor"); it != j.end()) prefix_token = template_prefix_token(*it);
  } catch (const json::exception& e) {
    fail(where, ": unexpected structure: ", e.what());
  }

  if (prefix_token) {
    spec.bos_id = find_token_id(spec, *prefix_token);
    spec.add_bos = spec.bos_id >= 0;
  }
  if (!dir.empty()) apply_hf_config(spec, read_hf_tokenizer_config(dir));
  return make_bpe_tokenizer(spec);
}

std::unique_ptr<Tokenizer> make_bpe_tokenizer_vocab_merges(const std::string& dir, const std::string& pre) {
  namespace fs = std::filesystem;
  const std::string vocab_path = (fs::path(dir) / "vocab.json").string();
  const std::string merges_path = (fs::path(dir) / "merges.txt").string();
  const BpeHfExtras extras = read_bpe_hf_extras(dir);
  auto fam = pretokenizer_family(pre.empty() || pre == "default" ? family_from_class(extras.tokenizer_class) : pre);
  if (!fam) fail(dir, ": unknown pre-tokenizer '", pre, "' (known: ", pretokenizer_family_names(), ")");

  BpeSpec spec;
  spec.source = vocab_path;
  try {
    read_vocab_object(json::parse(read_file(vocab_path)), spec, vocab_path);
  } catch (const json::exception& e) {
    fail(vocab_path, ": invalid JSON: ", e.what());
  }

  const std::string merges = read_file(merges_path);
  size_t line_no = 0;
  for (size_t pos = 0; pos < merges.size();) {
    size_t eol = merges.find('\n', pos);
    if (eol == std::string::npos) eol = merges.size();
    std::string_view line(merges.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line_no == 1 && line.starts_with("#version")) continue;  // header of HF-written files
    std::pair<std::string, std::string> pr;
    if (!split_merge_line(line, pr)) fail(merges_path, ":", line_no, ": expected 'left right', got '", line, "'");
    spec.merges.push_back(std::move(pr));
  }
  spec.source = dir;

  spec.pre_regexes = fam->regexes;
  spec.ignore_merges = fam->ignore_merges;
  spec.add_bos = fam->add_bos_default;
  apply_added_tokens(spec, extras.added_tokens);
  apply_hf_config(spec, read_hf_tokenizer_config(dir));
  return make_bpe_tokenizer(spec);
}

}  // namespace triattn
