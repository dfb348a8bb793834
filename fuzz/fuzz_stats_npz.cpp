// The official MLX port's statistics (.npz: a zip of .npy arrays named l_L_h_H_<field>), read as
// `--stats` reads them, checked against the configuration the file implies, and round-tripped
// through the .npz writer.
#include "stats_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  triattn::fuzz::probe_stats_round_trip("stats.npz", data, size);
  return 0;
}
