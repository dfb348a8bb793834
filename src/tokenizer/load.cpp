// The tokenizer factories declared in tokenizer.h: pick the implementation from the
// vocabulary's own description of itself.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/read_text_file.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace triattn {

namespace {

using nlohmann::json;

// True when a component (or any member of a Sequence) has type ByteLevel.
bool has_byte_level(const json& component, const char* list_key) {
  if (!component.is_object()) return false;
  if (component.value("type", "") == "ByteLevel") return true;
  auto it = component.find(list_key);
  if (it == component.end() || !it->is_array()) return false;
  for (const json& c : *it) {
    if (has_byte_level(c, list_key)) return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_gguf(const GgufFile& gguf) {
  const auto model = gguf.get_string_opt("tokenizer.ggml.model");
  if (!model) fail(gguf.path(), ": metadata key 'tokenizer.ggml.model' missing (the file has no tokenizer)");
  if (*model == "llama") return make_spm_tokenizer_gguf(gguf);
  if (*model == "gpt2") return make_bpe_tokenizer_gguf(gguf);
  fail(gguf.path(), ": tokenizer model '", *model, "' is not supported (only 'llama' and 'gpt2')");
}

std::unique_ptr<Tokenizer> load_tokenizer_hf_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string path = dir + "/tokenizer.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (fs::exists(dir + "/vocab.json", ec) && fs::exists(dir + "/merges.txt", ec)) {
      return make_bpe_tokenizer_vocab_merges(dir, "default");
    }
    fail(dir, ": no tokenizer.json (nor vocab.json + merges.txt) in the model directory");
  }
  const std::string text = read_text_file(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(path, ": invalid JSON: ", e.what());
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) {
    fail(path, ": missing 'model' object");
  }
  const std::string type = j["model"].value("type", "");
  if (type != "BPE") fail(path, ": tokenizer model type '", type, "' is not supported (only BPE)");
  const bool byte_level = has_byte_level(j.value("pre_tokenizer", json()), "pretokenizers") ||
                          has_byte_level(j.value("decoder", json()), "decoders");
  if (byte_level) return make_bpe_tokenizer_hf(text, dir);
  return make_spm_tokenizer_hf(text, dir);
}

std::unique_ptr<Tokenizer> load_tokenizer_llama2c(const std::string& tok_bin_path) {
  return make_spm_tokenizer_llama2c(tok_bin_path);
}

}  // namespace triattn
