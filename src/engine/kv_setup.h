#pragma once
// Turns user-facing KV settings (flags, TRIATTN_RUNTIME_* environment read by cli/, defaults)
// into a policy instance for one sequence of a model.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "kv/policy.h"
#include "model/model.h"

namespace triattn {

// --stats auto (a file of that name: --stats ./auto).
inline constexpr std::string_view kStatsAuto = "auto";

// The cold tier and query-aware recall (docs/design.md, "Cold tier and recall"): rows a
// policy evicts go to a compact per-sequence store instead of being dropped, and at recall
// points the rows the recent queries attend to most come back into the hot cache.
struct KvRecallSettings {
  bool on = false;                          // --kv-recall
  int64_t quota = 256;                      // --kv-recall-quota: most rows one event brings back per stream
  int64_t cold_bytes = int64_t{256} << 20;  // --kv-cold-memory: cap of one sequence's cold store
  friend bool operator==(const KvRecallSettings&, const KvRecallSettings&) = default;
};

struct KvSettings {
  std::string policy = "full";
  PolicyParams params;
  // --stats; empty: the statistics the model file carries, if any (calib/stats_embedded.h),
  // for the policies that need them; kStatsAuto: measured by the policy from each sequence's
  // own queries (PolicyParams::online_stats).
  std::string stats_path;
  DType cache_type = DType::F16;
  int64_t prefill_chunk = 512;  // upper bound on tokens per forward step in prefill
  // Context limit of each sequence (Sequence::context_limit); 0 = the model's context length.
  int64_t context_length = 0;
  KvRecallSettings recall;

  // Same settings: sequences made under them may continue one another (statistics compared
  // by identity).
  friend bool operator==(const KvSettings&, const KvSettings&) = default;
};

AttentionGeometry attention_geometry(const ModelConfig& c);

// Shared by every sequence of one model run: loads statistics once (validated against the
// model), then makes per-sequence policies.
class PolicyFactory {
 public:
  PolicyFactory(const Model& model, const KvSettings& settings);
  std::unique_ptr<KvPolicy> make() const;
  const KvSettings& settings() const { return settings_; }
  const AttentionGeometry& geometry() const { return geometry_; }
  // Each sequence's context limit: settings().context_length, else the model's context
  // length; 0 when neither is known.
  int64_t context_limit() const { return context_limit_; }
  // Tokens per (layer, KV head) a sequence with this prompt length may hold at most under
  // the policy; 0 = unbounded (full attention).
  int64_t memory_bound(int64_t prompt_len) const;
  // What loading the statistics noticed but did not refuse (another model name, a file too
  // old to carry a weights fingerprint); frontends print them.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  KvSettings settings_;
  AttentionGeometry geometry_;
  int64_t context_limit_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace triattn
