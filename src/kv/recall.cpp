#include "kv/recall.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "core/tensor.h"
#include "ops/ops.h"

namespace triattn {

namespace {

// One stream's rows of both tiers: hot rows 0..n_hot, then cold rows; their positions, and
// their recall scores once scored.
struct RecallRows {
  int64_t n_hot = 0, n_cold = 0;
  std::vector<int32_t> pos;
  std::vector<float> score;
};

// Scratch of one thread.
struct RecallScratch {
  std::vector<float> q, logits_hot, logits_cold, row, raw;
  std::vector<int32_t> qpos, order;
};

// Σ over the recent queries of the stream's query heads of their softmax over both tiers,
// max-pooled along positions (KvRecall's comment).
void score_stream(const KvCache& cache, int layer, int kv_head, const RecentQueries& queries, double scale,
                  RecallRows& rows, RecallScratch& t) {
  const int d = cache.shape().dim(layer), group = queries.group();
  const int s = cache.stream_index(layer, kv_head);
  const ColdStore& cold = cache.cold();
  rows.n_hot = cache.size(layer, kv_head);
  rows.n_cold = cold.size(s);
  const int64_t n = rows.n_hot + rows.n_cold;
  rows.pos.resize(static_cast<size_t>(n));
  std::copy_n(cache.positions(layer, kv_head), rows.n_hot, rows.pos.begin());
  std::copy_n(cold.positions(s), rows.n_cold, rows.pos.begin() + rows.n_hot);
  rows.score.assign(static_cast<size_t>(n), 0.0f);
  t.q.clear();
  t.qpos.clear();
  for (int g = 0; g < group; ++g) {
    const int h = kv_head * group + g;
    for (int64_t i = 0; i < queries.count(layer, h); ++i) {
      const float* q = queries.query(layer, h, i);
      t.q.insert(t.q.end(), q, q + d);
      t.qpos.push_back(queries.position(layer, h, i));
    }
  }
  const int64_t nq = static_cast<int64_t>(t.qpos.size());
  if (nq == 0 || n == 0) return;
  t.logits_hot.resize(static_cast<size_t>(nq * rows.n_hot));
  t.logits_cold.resize(static_cast<size_t>(nq * rows.n_cold));
  if (rows.n_hot) {
    const TensorView hot{cache.shape().type, {rows.n_hot, d}, cache.keys(layer, kv_head)};
    ops::matmul(hot, t.q.data(), nq, t.logits_hot.data(), nullptr);
  }
  if (rows.n_cold) {
    const TensorView keys{cold.type(s), {rows.n_cold, d}, cold.keys(s)};
    ops::matmul(keys, t.q.data(), nq, t.logits_cold.data(), nullptr);
  }
  t.raw.assign(static_cast<size_t>(n), 0.0f);
  t.row.resize(static_cast<size_t>(n));
  const float sc = static_cast<float>(scale), masked = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < nq; ++j) {
    const float* lh = t.logits_hot.data() + j * rows.n_hot;
    const float* lc = t.logits_cold.data() + j * rows.n_cold;
    for (int64_t r = 0; r < rows.n_hot; ++r) t.row[r] = rows.pos[r] <= t.qpos[j] ? sc * lh[r] : masked;
    for (int64_t r = 0; r < rows.n_cold; ++r)
      t.row[rows.n_hot + r] = rows.pos[rows.n_hot + r] <= t.qpos[j] ? sc * lc[r] : masked;
    ops::softmax(t.row.data(), n);
    for (int64_t r = 0; r < n; ++r) t.raw[r] += t.row[r];
  }
  // Max-pool along positions: a row scores the best of the rows from kPoolAfter before it to
  // kPoolBefore after it (so a found row lifts the kPoolAfter rows that follow it), each
  // discounted by its distance, so the found row ranks first and its neighbours nearest first.
  t.order.resize(static_cast<size_t>(n));
  std::iota(t.order.begin(), t.order.end(), 0);
  std::sort(t.order.begin(), t.order.end(), [&](int32_t a, int32_t b) { return rows.pos[a] < rows.pos[b]; });
  for (int64_t i = 0; i < n; ++i) {
    float best = 0.0f;
    const int64_t lo = std::max<int64_t>(0, i - KvRecall::kPoolAfter), hi = std::min(n - 1, i + KvRecall::kPoolBefore);
    for (int64_t j = lo; j <= hi; ++j)
      best = std::max(best, t.raw[t.order[j]] * (1.0f - static_cast<float>(std::abs(i - j)) / KvRecall::kPoolDecay));
    rows.score[t.order[i]] = best;
  }
}

// The streams that share one keep set under `mode` (kv/keep_set.h, select_by_mode), as
// (layer, KV head) lists.
std::vector<std::vector<std::pair<int, int>>> keep_set_groups(const KvCache& cache, PruningMode mode) {
  std::vector<int> layers;
  for (int l = 0; l < cache.shape().n_layers; ++l)
    if (!cache.uncompressed(l)) layers.push_back(l);
  const int H = cache.shape().n_kv_heads;
  std::vector<std::vector<std::pair<int, int>>> groups;
  switch (mode) {
    case PruningMode::PerLayerPerHead:
      for (int l : layers)
        for (int h = 0; h < cache.shape().kv_heads(l); ++h) groups.push_back({{l, h}});
      break;
    case PruningMode::PerHead:
      for (int h = 0; h < H; ++h) {
        groups.emplace_back();
        for (int l : layers) groups.back().push_back({l, h});
      }
      break;
    case PruningMode::PerLayer:
      for (int l : layers) {
        groups.emplace_back();
        for (int h = 0; h < cache.shape().kv_heads(l); ++h) groups.back().push_back({l, h});
      }
      break;
    case PruningMode::Global:
      groups.emplace_back();
      for (int l : layers)
        for (int h = 0; h < cache.shape().kv_heads(l); ++h) groups.back().push_back({l, h});
      break;
  }
  return groups;
}

}  // namespace

KvRecall::KvRecall(const AttentionGeometry& geometry, int64_t quota)
    : quota_(quota), queries_(geometry, kQueries), scale_(attention_scale(geometry)) {
  if (quota < 1) fail("--kv-recall-quota must be at least 1, got ", quota);
}

RecallPlan KvRecall::plan(KvCache& cache, PruningMode mode, const KeepRules& rules, ThreadPool* pool) {
  const int S = cache.n_streams();
  RecallPlan plan;
  plan.take.assign(static_cast<size_t>(S), {});
  plan.give.assign(static_cast<size_t>(S), {});
  if (!cache.cold().enabled()) return plan;
  std::vector<RecallRows> rows(static_cast<size_t>(S));
  std::vector<std::pair<int, int>> work;
  for (int l = 0; l < cache.shape().n_layers; ++l)
    if (!cache.uncompressed(l))
      for (int h = 0; h < cache.shape().kv_heads(l); ++h) work.push_back({l, h});
  std::vector<RecallScratch> scratch(static_cast<size_t>(pool ? pool->size() : 1));
  parallel_for_dynamic(pool, static_cast<int64_t>(work.size()), [&](int64_t b, int64_t e, int thread) {
    for (int64_t i = b; i < e; ++i) {
      const auto [l, h] = work[static_cast<size_t>(i)];
      score_stream(cache, l, h, queries_, scale_, rows[static_cast<size_t>(cache.stream_index(l, h))],
                   scratch[static_cast<size_t>(thread)]);
    }
  });

  // Streams that share a keep set must hold the same rows; the swap below, decided by
  // position, is then the same for each of them.
  for (const auto& group : keep_set_groups(cache, mode)) {
    const RecallRows& first = rows[static_cast<size_t>(cache.stream_index(group[0].first, group[0].second))];
    for (const auto& [l, h] : group) {
      const RecallRows& r = rows[static_cast<size_t>(cache.stream_index(l, h))];
      if (r.n_hot != first.n_hot || r.n_cold != first.n_cold || r.pos != first.pos)
        fail("recall: streams that share a keep set (", pruning_mode_name(mode), ") hold different rows");
    }
  }
  // A position's recall score is the best any stream gives it: a run of tokens one head reads
  // closely comes back in every stream, since the heads that read it next (a copy continuing)
  // may not be the ones the recent queries used.
  int32_t last = 0;
  for (const auto& [l, h] : work)
    for (int32_t p : rows[static_cast<size_t>(cache.stream_index(l, h))].pos) last = std::max(last, p);
  std::vector<float> wanted(static_cast<size_t>(last) + 1, 0.0f);
  for (const auto& [l, h] : work) {
    const RecallRows& r = rows[static_cast<size_t>(cache.stream_index(l, h))];
    for (size_t i = 0; i < r.pos.size(); ++i) wanted[r.pos[i]] = std::max(wanted[r.pos[i]], r.score[i]);
  }
  for (const auto& [l, h] : work) {
    const int s = cache.stream_index(l, h);
    const RecallRows& r = rows[static_cast<size_t>(s)];
    // The best cold rows against the least wanted hot rows that may leave.
    const StreamSplit split = split_stream(std::span<const int32_t>(r.pos.data(), static_cast<size_t>(r.n_hot)), rules);
    std::vector<int32_t> hot = split.candidates, cold(static_cast<size_t>(r.n_cold));
    std::iota(cold.begin(), cold.end(), 0);
    auto score = [&](int64_t row) { return wanted[r.pos[row]]; };
    // Ties: the newer row comes back, the older leaves.
    std::sort(cold.begin(), cold.end(), [&](int32_t a, int32_t b) {
      const float sa = score(r.n_hot + a), sb = score(r.n_hot + b);
      return sa != sb ? sa > sb : r.pos[r.n_hot + a] > r.pos[r.n_hot + b];
    });
    std::sort(hot.begin(), hot.end(), [&](int32_t a, int32_t b) {
      const float sa = score(a), sb = score(b);
      return sa != sb ? sa < sb : r.pos[a] < r.pos[b];
    });
    size_t k = 0;
    while (static_cast<int64_t>(k) < quota_ && k < cold.size() && k < hot.size() &&
           score(r.n_hot + cold[k]) > score(hot[k]))
      ++k;
    cold.resize(k);
    hot.resize(k);
    std::sort(cold.begin(), cold.end());
    std::sort(hot.begin(), hot.end());
    plan.take[static_cast<size_t>(s)] = std::move(cold);
    plan.give[static_cast<size_t>(s)] = std::move(hot);
    std::span<float> useful = cache.cold().usefulness(s);
    for (int64_t i = 0; i < r.n_cold; ++i) useful[i] = score(r.n_hot + i);
  }
  return plan;
}

}  // namespace triattn
