// The tokenizer factories declared in tokenizer.h: pick the implementation from the
// vocabulary's own description of itself.
#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "core/read_file.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace triattn {

namespace {

using nlohmann::json;

// The object's "type" when it is a string, else "". (json::value() throws a bare type_error
// when the key holds another type; a tokenizer.json with `"type": {...}` came from fuzzing.)
std::string type_of(const json& component) {
  if (!component.is_object()) return "";
  const auto it = component.find("type");
  return it != component.end() && it->is_string() ? it->get<std::string>() : "";
}

// True when a component (or any member of a Sequence) has type ByteLevel.
bool has_byte_level(const json& component, const char* list_key) {
  if (!component.is_object()) return false;
  if (type_of(component) == "ByteLevel") return true;
  auto it = component.find(list_key);
  if (it == component.end() || !it->is_array()) return false;
  for (const json& c : *it) {
    if (has_byte_level(c, list_key)) return true;
  }
  return false;
}

// First bytes of a file ("" when unreadable): enough to tell formats apart by magic.
std::string file_head(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string buf(n, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(n));
  buf.resize(static_cast<size_t>(in.gcount()));
  return buf;
}

// A tiktoken file is text lines "<base64> <rank>"; a SentencePiece .model is a protobuf
// whose first byte is a field tag (0x0a), never a base64 character.
bool looks_like_tiktoken(const std::string& path) {
  const std::string head = file_head(path, 256);
  const size_t space = head.find(' ');
  if (space == 0 || space == std::string::npos) return false;
  for (size_t i = 0; i < space; ++i) {
    const unsigned char c = static_cast<unsigned char>(head[i]);
    if (!std::isalnum(c) && c != '+' && c != '/' && c != '=') return false;
  }
  return space + 1 < head.size() && std::isdigit(static_cast<unsigned char>(head[space + 1]));
}

std::unique_ptr<Tokenizer> load_tokenizer_model_file(const std::string& path) {
  if (!looks_like_tiktoken(path)) {
    fail(path, ": not a tiktoken file (SentencePiece .model protobufs are not supported; use the model's "
               "tokenizer.json or a GGUF)");
  }
  return make_bpe_tokenizer_tiktoken(path);
}

// llama2.c checkpoint: header is 7 int32, the 6th the vocabulary size (negative when the
// classifier is separate); the tokenizer is tok<vocab>.bin or tokenizer.bin beside it.
std::unique_ptr<Tokenizer> load_tokenizer_llama2c_checkpoint(const std::filesystem::path& path) {
  const std::string head = file_head(path.string(), 28);
  if (head.size() < 28) fail(path.string(), ": too short for a llama2.c checkpoint header");
  int32_t vocab = 0;
  std::memcpy(&vocab, head.data() + 20, sizeof vocab);
  vocab = vocab < 0 ? -vocab : vocab;
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  const auto exact = dir / ("tok" + std::to_string(vocab) + ".bin");
  const auto generic = dir / "tokenizer.bin";
  std::error_code ec;
  if (std::filesystem::exists(exact, ec)) return load_tokenizer_llama2c(exact.string());
  if (std::filesystem::exists(generic, ec)) return load_tokenizer_llama2c(generic.string());
  fail(path.string(), ": llama2.c tokenizer not found (looked for ", exact.string(), " and ", generic.string(), ")");
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_any(const std::string& path_str) {
  namespace fs = std::filesystem;
  const fs::path path(path_str);
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path_str, ": no such file or directory");
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / "tokenizer.json", ec) ||
        (fs::exists(path / "vocab.json", ec) && fs::exists(path / "merges.txt", ec))) {
      return load_tokenizer_hf_dir(path_str);
    }
    if (fs::exists(path / "tokenizer.model", ec)) return load_tokenizer_model_file((path / "tokenizer.model").string());
    fail(path_str, ": no tokenizer in the directory (looked for tokenizer.json, vocab.json + merges.txt, "
                   "tokenizer.model)");
  }
  require_regular_file(path_str);  // a FIFO would block the reads below forever
  if (file_head(path_str, 4) == "GGUF") return load_tokenizer_gguf(*GgufFile::open(path_str));
  const std::string name = path.filename().string();
  const std::string dir = path.parent_path().empty() ? "." : path.parent_path().string();
  if (name == "tokenizer.json" || name == "vocab.json" || name == "merges.txt" || name == "tokenizer_config.json") {
    return load_tokenizer_hf_dir(dir);
  }
  if (path.extension() == ".model") return load_tokenizer_model_file(path_str);
  if (path.extension() == ".bin") {
    if (name == "tokenizer.bin" || name.rfind("tok", 0) == 0) return load_tokenizer_llama2c(path_str);
    return load_tokenizer_llama2c_checkpoint(path);
  }
  fail(path_str, ": unknown tokenizer format (expected a .gguf, a directory with tokenizer.json, vocab.json + "
                 "merges.txt or tokenizer.model, a llama2.c .bin, or one of those files)");
}

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
  const std::string text = read_file(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(path, ": invalid JSON: ", e.what());
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) {
    fail(path, ": missing 'model' object");
  }
  const std::string type = type_of(j["model"]);
  if (type != "BPE") fail(path, ": tokenizer model type '", type, "' is not supported (only BPE)");
  const bool byte_level = (j.contains("pre_tokenizer") && has_byte_level(j["pre_tokenizer"], "pretokenizers")) ||
                          (j.contains("decoder") && has_byte_level(j["decoder"], "decoders"));
  if (byte_level) return make_bpe_tokenizer_hf(text, dir);
  return make_spm_tokenizer_hf(text, dir);
}

std::unique_ptr<Tokenizer> load_tokenizer_llama2c(const std::string& tok_bin_path) {
  return make_spm_tokenizer_llama2c(tok_bin_path);
}

}  // namespace triattn
