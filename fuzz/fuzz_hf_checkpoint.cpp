// A Hugging Face model directory from one input: config.json | tokenizer.json |
// model.safetensors (parts cut at fuzz::kSep). Covers config.json parsing (architectures,
// dimensions, rope_scaling, tie_word_embeddings), the safetensors header and the tensors'
// names/shapes/dtypes against the config, and the tokenizer.json loader.
#include <filesystem>

#include "fuzz_util.h"
#include "model_probe.h"

using namespace triattn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split(data, size, 3);
  const std::string dir = fuzz::scratch_dir() + "/hf";
  std::filesystem::create_directories(dir);
  fuzz::write_file("hf/config.json", parts[0]);
  fuzz::write_file("hf/tokenizer.json", parts[1]);
  fuzz::write_file("hf/model.safetensors", parts[2]);
  fuzz::expect_named_errors([&] { fuzz::load_and_touch(dir); });
  return 0;
}
