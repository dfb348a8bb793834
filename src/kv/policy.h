#pragma once
// The KV policy seam (docs/design.md, "The seams"): a policy only reads the cache and produces KeepPlans;
// KvCache::apply() alone moves memory. One policy instance per sequence (baselines keep
// per-sequence observations). A policy declares what it needs observed; the engine collects
// only that, so TriAttention pays nothing for H2O's bookkeeping.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_cache.h"

namespace triattn {

// Per-head query statistics from calibration (docs/design.md, "Calibration" and "The stats file"), band-indexed by frequency.
// Under partial RoPE only the first rotary_dim coordinates form bands; the other head_dim −
// rotary_dim ("pass") coordinates never rotate and have statistics of their own.
struct HeadStats {
  int n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int rotary_dim = 0;  // 0 = head_dim (every coordinate rotates)
  int rotary_dims() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  int bands() const { return rotary_dims() / 2; }
  int pass_dims() const { return head_dim - rotary_dims(); }
  // [n_layers][n_heads][bands()], flattened row-major.
  std::vector<float> q_mean_real, q_mean_imag, q_abs_mean;
  // [n_layers][n_kv_heads][bands()]; analysis only.
  std::vector<float> k_mean_real, k_mean_imag, k_abs_mean;
  // Partial RoPE only (empty when pass_dims() == 0): the mean pre-RoPE query of the pass
  // coordinates [n_layers][n_heads][pass_dims()], and the mean of its norm ‖q_pass‖
  // [n_layers][n_heads].
  std::vector<float> q_pass_mean, q_pass_abs_mean;
};

// What a policy needs to know about the model's attention, filled by the engine.
struct AttentionGeometry {
  int n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int rotary_dim = 0;  // coordinates that rotate (the first ones); 0 = head_dim
  int rotary_dims() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  std::vector<float> rope_freqs;  // ω_f, f = 0..rotary_dims()/2-1 (after rope scaling)
  float attn_factor = 1.0f;       // YaRN mscale (fs); scores use fs²
  // Per layer: 0 = full attention, w > 0 = sliding window of w, kNoKv = no KV (as KvCacheShape::layer_window;
  // empty = every layer full). Policies compress the full layers only.
  std::vector<int32_t> layer_window;
};

enum class PruningMode { PerHead, PerLayerPerHead, PerLayer, Global };

// Statistics measured from a sequence's own queries (--stats auto; kv/online_stats.h). Made
// above this layer (engine/online_stats.h), where calibration's accumulator lives, so one
// loop sums queries for both; a policy that takes them builds its instance with this.
class OnlineStats;
using OnlineStatsMake = std::unique_ptr<OnlineStats> (*)(const AttentionGeometry& geometry);

struct PolicyParams {
  int64_t budget = 2048;         // B: tokens kept per (layer, KV head) after a pruning event
  int64_t divide_length = 128;   // β: prune when the cache would exceed B + β
  int64_t window = 128;          // W: most recent tokens always kept (clamped to B-1)
  // S: first tokens always kept. Unset: the policy's default (PolicyDescription::default_sink:
  // 4 for streaming, 0 for the others); make_kv_policy fills it in.
  std::optional<int64_t> sink;
  bool protect_prompt = false;   // keep every prompt token
  // Which streams share a keep set. Unset: the policy's default (PolicyDescription::default_mode:
  // per_head for triattention, per_layer_per_head for the baselines, as published).
  std::optional<PruningMode> mode;
  int max_offset_log2 = 16;      // D = {1, 2, 4, ..., 2^max_offset_log2}
  // The policies' own knobs; each policy's PolicyDescription::params describes those it reads.
  uint64_t seed = 0;
  int64_t obs_window = 32;
  int64_t pool_kernel = 7;
  double rkv_lambda = 0.1;
  double rkv_threshold = 0.5;
  std::shared_ptr<const HeadStats> stats;  // triattention, triattention-split
  // --stats auto (triattention): statistics accumulated from the sequence's own pre-RoPE
  // queries, made by this (a function, so equal settings compare equal); null = off. Until
  // auto_stats_min tokens were seen the policy keeps the most recent keys.
  OnlineStatsMake online_stats = nullptr;
  int64_t auto_stats_min = 0;

  // Same knobs (statistics compared by identity): two sequences may then share a cache
  // (the server's conversation reuse). Defaulted, so a new knob takes part by itself.
  friend bool operator==(const PolicyParams&, const PolicyParams&) = default;
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
  // A built-in policy answers from its description (kv/policies/policy_base.h).
  virtual unsigned needs() const { return kNeedNothing; }
  // A copy carrying this instance's observations and state, for a sequence forked from this
  // one (the choices of an `n` > 1 request share one prefill). Every built-in policy has one;
  // null (an out-of-tree policy without it): Sequence::fork builds a fresh instance when the
  // policy keeps no observations (needs() == kNeedNothing) and refuses otherwise.
  virtual std::unique_ptr<KvPolicy> clone() const { return nullptr; }
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
  // Both are called for every token the forward pass feeds (a prefill chunk's tokens in
  // order, after the whole chunk was appended), for every query head of every layer.
  virtual void observe_attention(int layer, int q_head, const float* weights, int64_t n_keys) {}
  // q_rotated: head_dim floats, the post-RoPE query of the token at absolute position `pos`.
  virtual void observe_query(int layer, int q_head, int32_t pos, const float* q_rotated) {}
  // The pre-RoPE queries q [n_tokens][n_heads * head_dim] and keys k [n_tokens][n_kv_heads *
  // head_dim] of `layer` for tokens pos0.. (ForwardObserver::on_pre_rope). The forward pass
  // hands them to every observer at no cost, so every policy gets them, needs() or not.
  virtual void observe_pre_rope(int layer, int64_t pos0, int64_t n_tokens, const float* q, const float* k) {}
  // A recall event (kv/recall.h) swapped rows between the hot and cold tiers: previous[s][r]
  // is the index row r of stream s had before it, -1 for a row back from the cold store. A
  // policy that keeps per-row observations moves them here.
  virtual void on_recall(const std::vector<std::vector<int32_t>>& previous) {}
  // The statistics this instance measured from its sequence (--stats auto), or null.
  virtual const OnlineStats* online_stats() const { return nullptr; }
};

// Where a knob's value lives in PolicyParams; its type says how a flag or a request field
// reads it (a count, an optional count, a real, a seed, a switch, a pruning mode).
using PolicyKnobMember =
    std::variant<int64_t PolicyParams::*, std::optional<int64_t> PolicyParams::*, double PolicyParams::*,
                 uint64_t PolicyParams::*, bool PolicyParams::*, std::optional<PruningMode> PolicyParams::*>;

// One knob of PolicyParams, described once: the CLI flag and its --help, the server's request
// field, `triattn policies` and the check that make_kv_policy runs all come from here.
struct PolicyKnob {
  std::string flag;           // "--obs-window"; the request field is the same name (knob_field)
  std::string default_value;  // "32", as PolicyParams{} holds it (sink, mode: per policy)
  std::string description;    // what it is, one line
  PolicyKnobMember member;
  int64_t min = 0, max = 0;           // accepted range of a count or seed
  double min_real = 0, max_real = 0;  // accepted range of a real
  std::string env;                    // the TRIATTN_RUNTIME_* variable that sets it, if any
  // Throws Error naming the flag (and `policy`, where several read it) for a value out of range.
  std::function<void(const PolicyParams&, std::string_view policy)> check;
};

// The request field of a knob: its flag without the dashes, '-' as '_' ("obs_window").
std::string knob_field(const PolicyKnob& knob);

// A policy described in its own file (kv/policies/<name>.cpp); the registry lists them.
struct PolicyDescription {
  using Factory = std::unique_ptr<KvPolicy> (*)(const PolicyParams&, const AttentionGeometry&);
  std::string name;
  std::string description;
  bool needs_stats = false;
  bool online_stats = false;  // can measure them itself (--stats auto: PolicyParams::online_stats)
  bool prunes = false;  // takes the budget knobs (B, β, W, S), checked before anything else
  unsigned needs = kNeedNothing;  // what the forward pass reports to it (its instances' needs())
  // The pruning mode used when PolicyParams::mode is unset; meaningless when !mode_applies.
  PruningMode default_mode = PruningMode::PerLayerPerHead;
  // False where --pruning-mode changes nothing (full never evicts; streaming keeps the same
  // positions in every stream whatever the mode).
  bool mode_applies = true;
  int64_t default_sink = 0;         // S when PolicyParams::sink is unset
  std::vector<PolicyKnob> params;  // its own knobs, checked in order (shared ones: kv_shared_params())
  Factory make = nullptr;          // receives resolved, validated parameters
};
// The name the registry's callers know it by.
using PolicyInfo = PolicyDescription;

const std::vector<PolicyDescription>& kv_policy_list();
// Null when no policy has this name.
const PolicyDescription* find_kv_policy(std::string_view name);
// The budget rules every pruning policy shares (--kv-budget, --divide-length, --window,
// --sink, --protect-prompt, --pruning-mode), with the defaults of PolicyParams{} (sink and
// mode: the common one, then each policy's own).
const std::vector<PolicyKnob>& kv_shared_params();
// The policies' own knobs, each once (several policies may read one), in registry order.
const std::vector<PolicyKnob>& kv_policy_knobs();
// The policies that can measure their statistics themselves (--stats auto), as "triattention".
std::string online_stats_policies();
// The policies that read a knob of kv_policy_knobs(), as "snapkv, rkv".
std::string kv_knob_readers(const PolicyKnob& knob);
// `params` with the policy's defaults filled in where unset (sink, mode), so that sink and
// mode have values. Throws Error for an unknown name (as make_kv_policy).
PolicyParams resolve_policy_params(const std::string& name, const PolicyParams& params);
// Throws Error naming the unknown policy and listing the known ones, a bad parameter (the
// flag and its range), or a missing requirement (e.g. triattention without stats: says how
// to calibrate). The policy receives resolve_policy_params(name, params).
std::unique_ptr<KvPolicy> make_kv_policy(const std::string& name, const PolicyParams& params,
                                         const AttentionGeometry& geometry);
std::optional<PruningMode> pruning_mode_from_name(std::string_view name);
std::string_view pruning_mode_name(PruningMode mode);
// "default" when unset (each policy's own, PolicyDescription::default_mode).
std::string_view pruning_mode_name(std::optional<PruningMode> mode);
// "per_head, per_layer_per_head, per_layer, global" (for help texts and error messages).
std::string pruning_mode_names();

}  // namespace triattn
