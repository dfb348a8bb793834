// The official implementation's statistics (.pt: torch zip + pickle of tensors over
// strided storages), read as `--stats` reads them, then checked against the configuration
// the file implies (shapes, finiteness).
#include "calib/stats_file.h"
#include "fuzz_util.h"
#include "model/config.h"

using namespace triattn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_file("stats.pt", data, size);
  fuzz::expect_named_errors([&] {
    const LoadedStats s = read_stats_any(path);
    ModelConfig c;
    c.arch = s.info.architecture;
    c.n_layers = s.stats->n_layers, c.n_heads = s.stats->n_heads, c.head_dim = s.stats->head_dim;
    c.n_kv_heads = s.stats->n_kv_heads ? s.stats->n_kv_heads : s.stats->n_heads;
    check_stats_match(s, c, path);
  });
  return 0;
}
