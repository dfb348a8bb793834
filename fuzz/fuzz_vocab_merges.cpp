// GPT-2 style vocab.json + merges.txt (+ tokenizer_config.json), as one input:
// vocab.json | merges.txt | tokenizer_config.json. Loaded from a directory, then used.
#include <filesystem>

#include "fuzz_util.h"
#include "tokenize_probe.h"

using namespace triattn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split(data, size, 3);
  const std::string dir = fuzz::scratch_dir() + "/vm";
  std::filesystem::create_directories(dir);
  fuzz::write_file("vm/vocab.json", parts[0]);
  fuzz::write_file("vm/merges.txt", parts[1]);
  const std::string cfg = dir + "/tokenizer_config.json";
  if (parts[2].empty()) {
    std::filesystem::remove(cfg);
  } else {
    fuzz::write_file("vm/tokenizer_config.json", parts[2]);
  }
  fuzz::expect_named_errors([&] {
    auto tok = load_tokenizer_any(dir);
    fuzz::probe_tokenizer(*tok);
  });
  return 0;
}
