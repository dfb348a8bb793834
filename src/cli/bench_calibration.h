#pragma once
// When `triattn bench` is asked for TriAttention without a stats file, it calibrates on a
// short built-in text first, so a benchmark needs nothing but a model. The statistics only
// steer which keys are kept; the speed figures do not depend on their quality.
#include <cstdint>
#include <memory>

#include "core/thread_pool.h"
#include "kv/policy.h"
#include "model/model.h"

namespace triattn::cli {

struct BuiltinCalibration {
  std::shared_ptr<const HeadStats> stats;
  int64_t tokens = 0;
  double seconds = 0;
};

BuiltinCalibration calibrate_builtin(const Model& model, ThreadPool& pool);

}  // namespace triattn::cli
