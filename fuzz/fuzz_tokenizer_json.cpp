// HF tokenizer.json (BPE with byte-level or Metaspace pre-tokenizers, SentencePiece-style
// models, added tokens, normalizers) + tokenizer_config.json (BOS/EOS, chat template), as
// one input: tokenizer.json | tokenizer_config.json. Loaded from a directory, then used.
#include <filesystem>

#include "fuzz_util.h"
#include "tokenize_probe.h"

using namespace triattn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split(data, size, 2);
  const std::string dir = fuzz::scratch_dir() + "/tokjson";
  std::filesystem::create_directories(dir);
  fuzz::write_file("tokjson/tokenizer.json", parts[0]);
  const std::string cfg = dir + "/tokenizer_config.json";
  if (parts[1].empty()) {
    std::filesystem::remove(cfg);
  } else {
    fuzz::write_file("tokjson/tokenizer_config.json", parts[1]);
  }
  fuzz::expect_named_errors([&] {
    auto tok = load_tokenizer_hf_dir(dir);
    fuzz::probe_tokenizer(*tok);
  });
  return 0;
}
