// The TRIA statistics (.triattention of the llama.cpp TurboQuant fork, triattention-ggml's
// v1/v2): both layouts behind one magic, told apart by their sizes, read as `--stats` reads
// them, checked against the configuration the file implies, and round-tripped through .npz.
#include "stats_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  triattn::fuzz::probe_stats_round_trip("stats.triattention", data, size);
  return 0;
}
