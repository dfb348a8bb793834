// A whole model from a fuzzed .gguf: metadata -> ModelConfig (dimension limits), tensor
// names/types/shapes checked against the config, the vocabulary, weight views.
#include "fuzz_util.h"
#include "model_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = triattn::fuzz::write_file("model.gguf", data, size);
  triattn::fuzz::expect_named_errors([&] { triattn::fuzz::load_and_touch(path); });
  return 0;
}
