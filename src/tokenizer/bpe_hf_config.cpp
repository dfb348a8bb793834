#include "tokenizer/bpe_hf_config.h"

#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/read_file.h"
#include "tokenizer/vocab_limits.h"

namespace triattn {

using nlohmann::json;

BpeHfExtras read_bpe_hf_extras(const std::string& dir) {
  BpeHfExtras ex;
  const std::string path = (dir.empty() ? std::string(".") : dir) + "/tokenizer_config.json";
  const auto text = read_file_if_exists(path);
  if (!text) return ex;
  json j;
  try {
    j = json::parse(*text);
  } catch (const json::exception& e) {
    fail(path, ": invalid JSON: ", e.what());
  }
  if (!j.is_object()) fail(path, ": top level is not an object");
  try {
    ex.tokenizer_class = j.value("tokenizer_class", "");
    if (auto it = j.find("added_tokens_decoder"); it != j.end() && it->is_object()) {
      for (const auto& [key, v] : it->items()) {
        BpeAddedToken t;
        size_t used = 0;
        long long id = -1;
        try {
          id = std::stoll(key, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != key.size() || id < 0 || id > INT32_MAX) fail(path, ": added token id '", key, "' is not a valid id");
        t.id = int32_t(id);
        t.content = v.at("content").get<std::string>();
        t.special = v.value("special", true);
        t.lstrip = v.value("lstrip", false);
        t.rstrip = v.value("rstrip", false);
        ex.added_tokens.push_back(std::move(t));
      }
    }
  } catch (const json::exception& e) {
    fail(path, ": unexpected structure: ", e.what());
  }
  return ex;
}

void apply_added_tokens(BpeSpec& spec, const std::vector<BpeAddedToken>& added) {
  if (spec.kinds.empty()) spec.kinds.assign(spec.tokens.size(), BpeTokenKind::Normal);
  // One bound for the whole list, so that a chain of added tokens cannot step it further.
  const size_t id_limit = spec.tokens.size() + added.size() + size_t(kMaxVocabHoles);
  for (const auto& t : added) {
    if (t.id < 0) fail(spec.source, ": added token '", t.content, "' has a negative id");
    if (t.content.empty()) fail(spec.source, ": added token ", t.id, " has empty text");
    if (size_t(t.id) >= spec.tokens.size()) {
      if (size_t(t.id) >= id_limit) {
        fail(spec.source, ": added token id ", t.id, " is far past the vocabulary (", spec.tokens.size(), " tokens)");
      }
      spec.kinds.resize(size_t(t.id) + 1, BpeTokenKind::Unused);
      spec.tokens.resize(size_t(t.id) + 1);
    }
    spec.tokens[t.id] = t.content;
    spec.kinds[t.id] = t.special ? BpeTokenKind::Control : BpeTokenKind::UserDefined;
    if (t.lstrip || t.rstrip) {
      spec.lstrip.resize(spec.tokens.size(), 0);
      spec.rstrip.resize(spec.tokens.size(), 0);
      spec.lstrip[t.id] = t.lstrip;
      spec.rstrip[t.id] = t.rstrip;
    }
  }
  // Holes (ids nobody names) get a recognisable placeholder that never matches text.
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (spec.tokens[i].empty()) {
      spec.tokens[i] = "[UNUSED_" + std::to_string(i) + "]";
      spec.kinds[i] = BpeTokenKind::Unused;
    }
  }
}

int32_t find_token_id(const BpeSpec& spec, const std::string& text) {
  int32_t normal = -1;
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (spec.tokens[i] != text) continue;
    if (!spec.kinds.empty() && spec.kinds[i] != BpeTokenKind::Normal) return int32_t(i);
    if (normal < 0) normal = int32_t(i);
  }
  return normal;
}

void apply_hf_config(BpeSpec& spec, const HfTokenizerConfig& cfg) {
  auto resolve = [&](const std::optional<std::string>& text, int32_t& id, const char* what) {
    if (!text) return;
    const int32_t found = find_token_id(spec, *text);
    if (found < 0) fail(spec.source, ": ", what, " token '", *text, "' from tokenizer_config.json is not in the vocabulary");
    id = found;
  };
  resolve(cfg.bos_token, spec.bos_id, "BOS");
  resolve(cfg.eos_token, spec.eos_id, "EOS");
  resolve(cfg.unk_token, spec.unk_id, "UNK");
  if (cfg.add_bos_token) spec.add_bos = *cfg.add_bos_token;
  if (!cfg.chat_template.empty()) spec.chat_template = cfg.chat_template;
  for (int32_t id : cfg.generation_eos_ids) {
    if (id >= 0 && size_t(id) < spec.tokens.size()) spec.extra_eog_ids.push_back(id);
  }
}

}  // namespace triattn
