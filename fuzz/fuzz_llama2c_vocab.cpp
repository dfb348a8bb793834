// llama2.c tokenizer files (tokNNN.bin: max_token_length, then score + length + bytes per
// piece), loaded as a SentencePiece vocabulary and used to encode and decode.
#include "fuzz_util.h"
#include "tokenize_probe.h"

using namespace triattn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_file("tok512.bin", data, size);
  fuzz::expect_named_errors([&] {
    auto tok = load_tokenizer_llama2c(path);
    fuzz::probe_tokenizer(*tok);
  });
  return 0;
}
