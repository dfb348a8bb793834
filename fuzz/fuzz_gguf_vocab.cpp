// GGUF vocabularies (SentencePiece and BPE: tokens, scores, token types, merges, special ids,
// pre-tokenizer name) loaded from a fuzzed .gguf, then used to encode and decode.
#include "formats/gguf.h"
#include "fuzz_util.h"
#include "tokenize_probe.h"

using namespace triattn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_file("vocab.gguf", data, size);
  fuzz::expect_named_errors([&] {
    auto g = GgufFile::open(path);
    auto tok = load_tokenizer_gguf(*g);
    fuzz::probe_tokenizer(*tok);
  });
  return 0;
}
