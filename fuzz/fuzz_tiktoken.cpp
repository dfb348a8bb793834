// tiktoken files (tokenizer.model: "<base64> <rank>" lines, Llama 3 style), loaded as
// load_tokenizer_any loads a .model file, then used.
#include "fuzz_util.h"
#include "tokenize_probe.h"

using namespace triattn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_file("tokenizer.model", data, size);
  fuzz::expect_named_errors([&] {
    auto tok = load_tokenizer_any(path);
    fuzz::probe_tokenizer(*tok);
  });
  return 0;
}
