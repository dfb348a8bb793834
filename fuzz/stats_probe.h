#pragma once
// One stats-file probe for both formats (fuzz_stats_safetensors, fuzz_stats_pt): the bytes are
// written under `name`, whose extension picks the reader as `--stats` does, read, then checked
// against the configuration the file itself implies (shapes, finiteness).
#include <cstdint>
#include <string>

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

}  // namespace triattn::fuzz
