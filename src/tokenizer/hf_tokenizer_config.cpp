#include "tokenizer/hf_tokenizer_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/read_file.h"

namespace triattn {

namespace {

using nlohmann::json;

json parse_json_file(const std::string& path, const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(path, ": invalid JSON: ", e.what());
  }
}

// Special tokens are written either as "text" or as {"content": "text", ...}.
std::optional<std::string> token_text(const json& cfg, const char* key, const std::string& path) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto c = it->find("content");
    if (c != it->end() && c->is_string()) return c->get<std::string>();
  }
  fail(path, ": '", key, "' is neither a string nor an object with a string 'content'");
}

}  // namespace

HfTokenizerConfig read_hf_tokenizer_config(const std::string& dir) {
  HfTokenizerConfig cfg;
  const std::string path = dir + "/tokenizer_config.json";
  if (auto text = read_file_if_exists(path)) {
    const json j = parse_json_file(path, *text);
    if (!j.is_object()) fail(path, ": expected a JSON object");
    if (auto it = j.find("add_bos_token"); it != j.end() && it->is_boolean()) cfg.add_bos_token = it->get<bool>();
    if (auto it = j.find("add_eos_token"); it != j.end() && it->is_boolean()) cfg.add_eos_token = it->get<bool>();
    cfg.bos_token = token_text(j, "bos_token", path);
    cfg.eos_token = token_text(j, "eos_token", path);
    cfg.unk_token = token_text(j, "unk_token", path);
    cfg.pad_token = token_text(j, "pad_token", path);
    if (auto it = j.find("chat_template"); it != j.end()) {
      if (it->is_string()) {
        cfg.chat_template = it->get<std::string>();
      } else if (it->is_array()) {
        // Several named templates: the "default" one is what a plain chat uses.
        for (const json& t : *it) {
          if (t.is_object() && t.value("name", "") == "default" && t.contains("template") &&
              t["template"].is_string()) {
            cfg.chat_template = t["template"].get<std::string>();
          }
        }
      }
    }
  }
  const std::string gen_path = dir + "/generation_config.json";
  if (auto text = read_file_if_exists(gen_path)) {
    const json j = parse_json_file(gen_path, *text);
    if (j.is_object()) {
      if (auto it = j.find("eos_token_id"); it != j.end()) {
        if (it->is_number_integer()) {
          cfg.generation_eos_ids.push_back(it->get<int32_t>());
        } else if (it->is_array()) {
          for (const json& v : *it) {
            if (v.is_number_integer()) cfg.generation_eos_ids.push_back(v.get<int32_t>());
          }
        }
      }
    }
  }
  return cfg;
}

}  // namespace triattn
