#pragma once
// One stats-file probe for every format (fuzz_stats_safetensors, fuzz_stats_pt, fuzz_stats_tria,
// fuzz_stats_npz): the bytes are
// written under `name`, whose extension picks the reader as `--stats` does, read, then checked
// against the configuration the file itself implies (shapes, finiteness).
#include <cstdint>
#include <string>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "calib/npz_stats.h"
#include "calib/stats_file.h"
#include "fuzz_util.h"
#include "model/config.h"

namespace triattn::fuzz {

inline void probe_stats_file(const char* name, const uint8_t* data, size_t size) {
  const std::string path = write_file(name, data, size);
  expect_named_errors([&] {
    const LoadedStats s = read_stats_any(path);
    ModelConfig c;
    c.arch = s.info.architecture;
    c.n_layers = s.stats->n_layers, c.n_heads = s.stats->n_heads, c.head_dim = s.stats->head_dim;
    c.n_kv_heads = s.stats->n_kv_heads ? s.stats->n_kv_heads : s.stats->n_heads;
    check_stats_match(s, c, path);
  });
}

// The foreign readers (fuzz_stats_tria, fuzz_stats_npz): as above, and whatever reads must
// survive a round trip through the .npz writer bit for bit (the writer's output is the input
// of the same family of readers), or the target aborts.
inline void probe_stats_round_trip(const char* name, const uint8_t* data, size_t size) {
  probe_stats_file(name, data, size);
  expect_named_errors([&] {
    const LoadedStats s = read_stats_any(write_file(name, data, size));
    const std::vector<uint8_t> npz = npz_stats_bytes(*s.stats);
    const LoadedStats back = read_stats_any(write_file("round_trip.npz", npz.data(), npz.size()));
    for (const auto& [a, b] : {std::pair{&s.stats->q_mean_real, &back.stats->q_mean_real},
                               {&s.stats->q_mean_imag, &back.stats->q_mean_imag},
                               {&s.stats->q_abs_mean, &back.stats->q_abs_mean}})
      if (a->size() != b->size() || std::memcmp(a->data(), b->data(), 4 * a->size()) != 0) {
        std::fprintf(stderr, "fuzz: statistics changed in a round trip through .npz\n");
        std::abort();
      }
  });
}

}  // namespace triattn::fuzz
