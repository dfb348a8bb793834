#include "kv/keep_set.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "kv/budget_knobs.h"

namespace triattn {

KeepRules keep_rules(const PolicyParams& params, const SequenceInfo& seq) {
  if (params.budget < 1) fail("KV policy: budget must be at least 1 token (got ", params.budget, ")");
  KeepRules r;
  r.budget = params.budget;
  // A window as large as the budget would leave no slot for the score to decide anything.
  r.window = std::clamp<int64_t>(params.window, 0, params.budget - 1);
  r.sink = std::max<int64_t>(params.sink.value_or(0), 0);
  r.protect_below = params.protect_prompt ? std::max<int64_t>(seq.prompt_len, 0) : 0;
  return r;
}

void validate_budget_params(const PolicyParams& p) {
  for (const PolicyKnob& k : budget_knobs())  // each range, in the knobs' order
    if (k.check) k.check(p, "");
  const int64_t sink = p.sink.value_or(0);
  if (sink >= p.budget)
    fail("sink (--sink) ", sink, " must be smaller than the KV budget (--kv-budget) ", p.budget,
         ": sink tokens are always kept, so the budget would have no room left to select");
}

int64_t effective_budget(const PolicyParams& params, const SequenceInfo& seq) {
  const KeepRules r = keep_rules(params, seq);
  return std::max(r.budget, std::max(r.sink, r.protect_below) + r.window);
}

bool prune_due(const KvCache& cache, int64_t n_new, const PolicyParams& params, const SequenceInfo& seq) {
  // Sliding-window layers are bounded by their window, not by B: only full layers trigger.
  const int64_t n = cache.max_full_size(), budget = effective_budget(params, seq);
  return n > budget && n + n_new > budget + params.divide_length;
}

StreamSplit split_stream(std::span<const int32_t> pos, const KeepRules& rules) {
  const int64_t n = static_cast<int64_t>(pos.size());
  const int64_t window_start = n - std::min(rules.window, n);
  const int64_t floor = std::max(rules.sink, rules.protect_below);
  StreamSplit s;
  s.candidates.reserve(pos.size());
  for (int64_t i = 0; i < n; ++i) {
    const bool prot = i >= window_start || pos[i] < floor;
    (prot ? s.protected_rows : s.candidates).push_back(static_cast<int32_t>(i));
  }
  return s;
}

std::vector<int32_t> select_keep(const StreamSplit& split, std::span<const float> scores,
                                 std::span<const int32_t> pos, int64_t budget) {
  if (scores.size() != split.candidates.size())
    fail("select_keep: ", scores.size(), " scores for ", split.candidates.size(), " candidates");
  const int64_t slots = std::max<int64_t>(0, budget - static_cast<int64_t>(split.protected_rows.size()));
  std::vector<int32_t> keep = split.protected_rows;
  if (slots >= static_cast<int64_t>(split.candidates.size())) {
    keep.insert(keep.end(), split.candidates.begin(), split.candidates.end());
  } else if (slots > 0) {
    std::vector<int32_t> order(split.candidates.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    // Strict weak order: score descending (NaN last), then older position first, then row.
    auto better = [&](int32_t a, int32_t b) {
      const float sa = scores[a], sb = scores[b];
      const bool na = std::isnan(sa), nb = std::isnan(sb);
      if (na != nb) return nb;
      if (!na && sa != sb) return sa > sb;
      const int32_t pa = pos[split.candidates[a]], pb = pos[split.candidates[b]];
      if (pa != pb) return pa < pb;
      return a < b;
    };
    std::nth_element(order.begin(), order.begin() + slots, order.end(), better);
    for (int64_t i = 0; i < slots; ++i) keep.push_back(split.candidates[order[i]]);
  }
  std::sort(keep.begin(), keep.end());
  return keep;
}

std::vector<int32_t> keep_most_recent(const StreamSplit& split, int64_t budget) {
  const int64_t n_cand = static_cast<int64_t>(split.candidates.size());
  const int64_t slots = std::clamp<int64_t>(budget - static_cast<int64_t>(split.protected_rows.size()), 0, n_cand);
  std::vector<int32_t> keep = split.protected_rows;
  keep.insert(keep.end(), split.candidates.end() - slots, split.candidates.end());
  std::sort(keep.begin(), keep.end());
  return keep;
}

std::span<const int32_t> stream_positions(const KvCache& cache, int layer, int head) {
  return {cache.positions(layer, head), static_cast<size_t>(cache.size(layer, head))};
}

namespace {

// One keep set for the streams in `members` (which must hold the same tokens): a candidate's
// score is the max over each consecutive run of `run` members (the heads of one layer), then
// the mean over the runs (the layers).
void select_shared(const KvCache& cache, const std::vector<int>& members, int run, const KeepRules& rules,
                   const std::vector<StreamSplit>& splits, const std::vector<std::vector<float>>& scores,
                   PruningMode mode, std::string_view policy, KeepPlan& plan) {
  const int H = cache.shape().n_kv_heads;
  const int first = members.front();
  const auto pos0 = stream_positions(cache, first / H, first % H);
  for (int s : members) {
    const auto pos = stream_positions(cache, s / H, s % H);
    if (pos.size() != pos0.size() || !std::equal(pos.begin(), pos.end(), pos0.begin()))
      fail(policy, ": pruning mode ", pruning_mode_name(mode),
           " shares one keep set across streams, but the cache's streams hold different tokens "
           "(was the cache pruned with another mode?)");
  }
  const size_t n = scores[first].size();
  const int n_runs = static_cast<int>(members.size()) / run;
  std::vector<float> agg(n, 0.0f), run_max(n);
  for (int r = 0; r < n_runs; ++r) {
    std::fill(run_max.begin(), run_max.end(), -std::numeric_limits<float>::infinity());
    for (int m = r * run; m < (r + 1) * run; ++m) {
      const auto& z = scores[members[m]];
      for (size_t i = 0; i < n; ++i) run_max[i] = std::max(run_max[i], z[i]);
    }
    for (size_t i = 0; i < n; ++i) agg[i] += run_max[i];
  }
  for (size_t i = 0; i < n; ++i) agg[i] /= static_cast<float>(n_runs);
  const auto keep = select_keep(splits[first], agg, pos0, rules.budget);
  for (int s : members) plan.keep[s] = keep;
}

}  // namespace

KeepPlan select_by_mode(const KvCache& cache, PruningMode mode, const KeepRules& rules,
                        const std::vector<StreamSplit>& splits, const std::vector<std::vector<float>>& scores,
                        std::string_view policy) {
  const int L = cache.shape().n_layers, H = cache.shape().n_kv_heads;
  if (splits.size() != static_cast<size_t>(cache.n_streams()) || scores.size() != splits.size())
    fail("select_by_mode: ", splits.size(), " splits and ", scores.size(), " score lists for ", cache.n_streams(),
         " streams");
  KeepPlan plan;
  plan.keep.resize(splits.size());
  // Sliding-window layers keep every row (the forward pass bounds them), layers without KV have
  // none, and neither takes part in a shared keep set: the sets are over the full-attention
  // layers.
  std::vector<int> full;
  for (int l = 0; l < L; ++l) {
    if (!cache.uncompressed(l)) {
      full.push_back(l);
      continue;
    }
    for (int h = 0; h < H; ++h) plan.keep[cache.stream_index(l, h)] = all_rows(cache.size(l, h));
  }
  if (full.empty()) return plan;
  switch (mode) {
    case PruningMode::PerLayerPerHead:
      for (int l : full)
        for (int h = 0; h < H; ++h) {
          const int s = cache.stream_index(l, h);
          plan.keep[s] = select_keep(splits[s], scores[s], stream_positions(cache, l, h), rules.budget);
        }
      break;
    case PruningMode::PerHead:  // one set per KV-head index: mean over layers
      for (int h = 0; h < H; ++h) {
        std::vector<int> members;
        for (int l : full) members.push_back(cache.stream_index(l, h));
        select_shared(cache, members, /*run=*/1, rules, splits, scores, mode, policy, plan);
      }
      break;
    case PruningMode::PerLayer:  // one set per layer: max over that layer's heads
      for (int l : full) {
        std::vector<int> members;
        for (int h = 0; h < H; ++h) members.push_back(cache.stream_index(l, h));
        select_shared(cache, members, /*run=*/H, rules, splits, scores, mode, policy, plan);
      }
      break;
    case PruningMode::Global: {  // mean over layers of the max over heads
      std::vector<int> members;
      for (int l : full)
        for (int h = 0; h < H; ++h) members.push_back(cache.stream_index(l, h));
      select_shared(cache, members, /*run=*/H, rules, splits, scores, mode, policy, plan);
      break;
    }
  }
  return plan;
}

std::vector<int32_t> all_rows(int64_t n) {
  std::vector<int32_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  return rows;
}

KeepPlan uniform_plan(int n_streams, const std::vector<int32_t>& keep) {
  KeepPlan plan;
  plan.keep.assign(n_streams, keep);
  return plan;
}

bool plan_evicts(const KvCache& cache, const KeepPlan& plan) {
  const auto& sh = cache.shape();
  for (int l = 0; l < sh.n_layers; ++l)
    for (int h = 0; h < sh.n_kv_heads; ++h)
      if (static_cast<int64_t>(plan.keep[cache.stream_index(l, h)].size()) < cache.size(l, h)) return true;
  return false;
}

}  // namespace triattn
