// safetensors reader: 8-byte header length, JSON header (dtypes, shapes, data_offsets,
// __metadata__), offsets against the file. Each reported tensor is read at both ends.
#include "formats/safetensors.h"
#include "fuzz_util.h"

using namespace triattn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_file("in.safetensors", data, size);
  fuzz::expect_named_errors([&] {
    auto f = SafetensorsFile::open(path);
    size_t sum = f->metadata().size();
    for (const auto& t : f->tensors()) {
      if (f->find(t.name) != &t) std::abort();
      if (t.nbytes == 0) continue;
      const auto* p = static_cast<const uint8_t*>(t.data);
      sum += p[0] + p[t.nbytes - 1];
    }
    volatile size_t sink = sum;
    (void)sink;
  });
  return 0;
}
