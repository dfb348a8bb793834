// GGUF reader: header, every metadata value type (nested arrays), tensor table, offsets.
// Every tensor a successful open reports is read at its first and last byte, so a bounds
// check that lets a tensor run past the mapping shows up as a crash.
#include "formats/gguf.h"
#include "fuzz_util.h"

using namespace triattn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_file("in.gguf", data, size);
  fuzz::expect_named_errors([&] {
    auto g = GgufFile::open(path);
    size_t sum = 0;
    for (const auto& [key, v] : g->metadata()) {
      sum += key.size();
      if (v.type == GgufType::STRING) sum += v.as_string().size();
      if (v.type == GgufType::ARRAY) sum += v.as_array().items.size();
    }
    for (const auto& t : g->tensors()) {
      if (t.nbytes == 0) continue;
      const auto* p = static_cast<const uint8_t*>(t.data);
      sum += p[0] + p[t.nbytes - 1];
    }
    // The typed getters the loaders use, on the keys they ask for.
    for (const char* k : {"general.architecture", "general.name", "tokenizer.ggml.model"}) {
      try { sum += g->get_string_opt(k).value_or("").size(); } catch (const Error&) {}
    }
    for (const char* k : {"llama.block_count", "llama.context_length", "general.alignment"}) {
      try { sum += static_cast<size_t>(g->get_int_opt(k).value_or(0)); } catch (const Error&) {}
    }
    for (const char* k : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges"}) {
      try { sum += g->get_string_array(k).size(); } catch (const Error&) {}
    }
    try { sum += g->get_float_array("tokenizer.ggml.scores").size(); } catch (const Error&) {}
    try { sum += g->get_int_array("tokenizer.ggml.token_type").size(); } catch (const Error&) {}
    volatile size_t sink = sum;
    (void)sink;
  });
  return 0;
}
