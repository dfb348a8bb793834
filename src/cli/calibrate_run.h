#pragma once
// The calibration run as `triattn calibrate` does it, for both of its outputs (a stats file,
// or statistics stored in the model): progress on stderr, the few-tokens warning, the
// optional token list, the summary line.
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "engine/calibrate.h"
#include "model/model.h"

namespace triattn::cli {

struct CalibrateRunOptions {
  int64_t max_tokens = 0, window = 0, chunk = 512;
  DType kv_type = DType::F32;
};

CalibrationResult run_calibration(const Model& model, const std::string& text, const CalibrateRunOptions& o,
                                  int threads);
// --dump-tokens: the ids used, one per line, written atomically; nothing when path is empty.
void write_token_dump(const std::string& path, const CalibrationResult& r);
// "861 tokens in 1 window(s), 5 layers x 8 query heads x 4 bands, input fnv1a64:..."
std::string describe_result(const CalibrationResult& r);

}  // namespace triattn::cli
