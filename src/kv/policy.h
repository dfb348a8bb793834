#pragma once
// The KV policy seam (DESIGN §2): a policy only reads the cache and produces KeepPlans;
// KvCache::apply() alone moves memory. One policy instance per sequence (baselines keep
// per-sequence observations). A policy declares what it needs observed; the engine collects
// only that, so TriAttention pays nothing for H2O's bookkeeping.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_cache.h"

namespace triattn {

// Per-head query statistics from calibration (DESIGN §1, §3), band-indexed by frequency.
struct HeadStats {
  int n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  // [n_layers][n_heads][head_dim/2], flattened row-major.
  std::vector<float> q_mean_real, q_mean_imag, q_abs_mean;
  // [n_layers][n_kv_heads][head_dim/2]; analysis only.
  std::vector<float> k_mean_real, k_mean_imag, k_abs_mean;
};

// What a policy needs to know about the model's attention, filled by the engine.
struct AttentionGeometry {
  int n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  std::vector<float> rope_freqs;  // ω_f, f = 0..head_dim/2-1 (after rope scaling)
  float attn_factor = 1.0f;       // YaRN mscale (fs); scores use fs²
};

enum class PruningMode { PerHead, PerLayerPerHead, PerLayer, Global };

struct PolicyParams {
  int64_t budget = 2048;         // B: tokens kept per (layer, KV head) after a pruning event
  int64_t divide_length = 128;   // β: prune when the cache would exceed B + β
  int64_t window = 128;          // W: most recent tokens always kept (clamped to B-1)
  int64_t sink = 0;              // S: first tokens always kept
  bool protect_prompt = false;   // keep every prompt token
  PruningMode mode = PruningMode::PerHead;
  int max_offset_log2 = 16;      // D = {1, 2, 4, ..., 2^max_offset_log2}
  uint64_t seed = 0;             // for the random baseline
  std::shared_ptr<const HeadStats> stats;  // triattention
};

struct SequenceInfo {
  int64_t prompt_len = 0;  // tokens of the prompt (protect-prompt)
};

enum PolicyNeed : unsigned {
  kNeedNothing = 0,
  kNeedQueries = 1u << 0,    // post-RoPE queries of recent tokens (SnapKV-like)
  kNeedAttention = 1u << 1,  // attention weights of each query head over the cache
};

class KvPolicy {
 public:
  virtual ~KvPolicy() = default;
  virtual std::string_view name() const = 0;
  virtual unsigned needs() const { return kNeedNothing; }
  // Most tokens the engine may append in one step (prefill chunk size); 0 = no limit.
  virtual int64_t max_append() const { return 0; }
  // The most tokens per stream this policy lets the cache hold for this sequence (B + β,
  // more when protected tokens outgrow B); 0 = unbounded. The engine reserves by it and
  // applies the context rule by it (Sequence).
  virtual int64_t memory_bound(const SequenceInfo& seq) const { return 0; }
  // Called before n_new tokens are appended to `cache`. Returns a plan when the cache must
  // shrink first; the engine applies it and times this call as scoring time. `pool`: the
  // threads the policy may score on (the engine's decode threads, idle meanwhile), or null.
  virtual std::optional<KeepPlan> plan_before_append(const KvCache& cache, int64_t n_new,
                                                     const SequenceInfo& seq, ThreadPool* pool) = 0;
  // Observation hooks; the engine calls them only when needs() asks.
  // weights: softmax attention of query head `q_head` of `layer` over the rows of the
  // stream (layer, q_head / group) in cache order.
  virtual void observe_attention(int layer, int q_head, const float* weights, int64_t n_keys) {}
  virtual void observe_query(int layer, int q_head, const float* q_rotated) {}
};

struct PolicyInfo {
  std::string name;
  std::string description;
  bool needs_stats = false;
  bool prunes = false;  // takes the budget knobs (B, β, W, S), checked before anything else
};

const std::vector<PolicyInfo>& kv_policy_list();
// Throws Error naming the unknown policy and listing the known ones, or naming a missing
// requirement (e.g. triattention without stats: says how to calibrate).
std::unique_ptr<KvPolicy> make_kv_policy(const std::string& name, const PolicyParams& params,
                                         const AttentionGeometry& geometry);
std::optional<PruningMode> pruning_mode_from_name(std::string_view name);
std::string_view pruning_mode_name(PruningMode mode);
// "per_head, per_layer_per_head, per_layer, global" (for help texts and error messages).
std::string pruning_mode_names();

}  // namespace triattn
