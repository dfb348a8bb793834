// Statistics files in the runtime's own format (safetensors: q/k mean and abs-mean tensors,
// __metadata__ identity fields), read as `--stats` reads them, then checked against the
// configuration the file claims (shapes, finiteness).
#include "stats_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  triattn::fuzz::probe_stats_file("stats.safetensors", data, size);
  return 0;
}
