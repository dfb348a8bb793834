#pragma once
// `triattn calibrate --into MODEL` (docs/commands.md): statistics stored in the model itself,
// calibrated here (--input) or taken from a stats file (--stats), instead of a separate file.
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace triattn::cli {

struct CalibrateIntoArgs {
  std::string into;         // a .gguf or an HF directory
  std::string model;        // -m: empty, or the same model as `into`
  std::string input;        // --input TEXT (calibrate) ...
  std::string output;       // -o: the new .gguf (a directory takes its file in place: no -o)
  std::string stats;        // ... or --stats FILE (store these)
  std::string dump_tokens;  // with --input only
  bool replace = false;     // statistics already in the model are replaced, not refused
  DType kv_type = DType::F32;
  int64_t max_tokens = 0, window = 0, chunk = 512;
  int threads = 0;
};

// Returns the exit code; Error for every refusal (before the model is loaded where it can).
int calibrate_into(const CalibrateIntoArgs& a);

}  // namespace triattn::cli
