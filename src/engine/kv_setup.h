#pragma once
// Turns user-facing KV settings (flags, TRIATTN_RUNTIME_* environment, defaults) into a
// policy instance for one sequence of a model.
#include <memory>
#include <string>

#include "core/dtype.h"
#include "kv/policy.h"
#include "model/model.h"

namespace triattn {

struct KvSettings {
  std::string policy = "full";
  PolicyParams params;
  std::string stats_path;
  DType cache_type = DType::F16;
  int64_t prefill_chunk = 512;  // upper bound on tokens per forward step in prefill
};

// Environment variables of the reference implementation; flags set later override them.
// TRIATTN_RUNTIME_KV_BUDGET, _DIVIDE_LENGTH, _WINDOW_SIZE, _SPARSE_STATS_PATH, _PRUNING_MODE.
// A variable that is set but malformed raises Error naming it.
void apply_kv_environment(KvSettings& s);

AttentionGeometry attention_geometry(const ModelConfig& c);

// Shared by every sequence of one model run: loads statistics once (validated against the
// model), then makes per-sequence policies.
class PolicyFactory {
 public:
  PolicyFactory(const Model& model, const KvSettings& settings);
  std::unique_ptr<KvPolicy> make() const;
  const KvSettings& settings() const { return settings_; }

 private:
  KvSettings settings_;
  AttentionGeometry geometry_;
};

}  // namespace triattn
