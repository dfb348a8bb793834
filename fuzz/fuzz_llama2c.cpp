// llama2.c checkpoints (legacy version 0, "ak42" versions 1 and 2 with int8 groups): header,
// sizes implied by it against the file, the tensors; loaded as a model with a fixed
// tokenizer.bin beside it (stories260k's tok512.bin), and version-2 tensors dequantized.
#include <fstream>
#include <iterator>

#include "formats/llama2c.h"
#include "fuzz_util.h"
#include "model_probe.h"

using namespace triattn;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::ifstream in(TRIATTN_SHARED_DIR "/models/stories260k/tok512.bin", std::ios::binary);
  const std::string tok((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (tok.empty()) {
    std::fprintf(stderr, "fuzz_llama2c: cannot read " TRIATTN_SHARED_DIR "/models/stories260k/tok512.bin\n");
    std::abort();
  }
  fuzz::write_file("tokenizer.bin", tok);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_file("model.bin", data, size);
  fuzz::expect_named_errors([&] {
    auto ck = Llama2cCheckpoint::open(path);
    // Dequantize the smallest tensors fully (bounded: at most 1 MiB of floats).
    for (const Llama2cTensor* t : {&ck->rms_final, &ck->tok_embeddings}) {
      if (t->numel() > 0 && t->numel() <= (1 << 18)) {
        std::vector<float> out(static_cast<size_t>(t->numel()));
        t->dequantize(out.data());
      }
    }
  });
  fuzz::expect_named_errors([&] { fuzz::load_and_touch(path); });
  return 0;
}
