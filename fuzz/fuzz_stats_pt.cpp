// The official implementation's statistics (.pt: torch zip + pickle of tensors over
// strided storages), read as `--stats` reads them, then checked against the configuration
// the file implies (shapes, finiteness).
#include "stats_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  triattn::fuzz::probe_stats_file("stats.pt", data, size);
  return 0;
}
