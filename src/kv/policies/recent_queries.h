#pragma once
// The attention of recent queries over the cache, recomputed at a pruning event: what SnapKV
// (the last w queries), R-KV (the same importance) and TOVA (the current query) score with.
//
// Why queries and not the forward pass's attention weights: weights are rows over the cache
// as it was when each query ran, and every pruning event would have to remap them; queries
// carry no row indices, so nothing needs compacting, and recomputing their softmax over the
// cache about to be pruned is how SnapKV and kvpress score too. Between two events the cache
// only grows, so for the queries since the last event the recomputed weights are the ones
// the forward pass used (keys after a query's position are masked, as there).
#include <cstdint>
#include <vector>

#include "kv/keep_set.h"
#include "kv/kv_cache.h"
#include "kv/policy.h"

namespace triattn {

// The last `capacity` post-RoPE queries of every (layer, query head), with their positions.
// Storage grows with what was observed, up to capacity per head.
class RecentQueries {
 public:
  RecentQueries(const AttentionGeometry& geometry, int64_t capacity);
  void push(int layer, int q_head, int32_t pos, const float* q);
  int64_t count(int layer, int q_head) const;
  // The i-th oldest of the count() kept queries (head_dim floats) and its position.
  const float* query(int layer, int q_head, int64_t i) const;
  int32_t position(int layer, int q_head, int64_t i) const;
  int group() const { return group_; }
  int head_dim() const { return d_; }

 private:
  struct Ring {
    std::vector<float> q;        // up to capacity rows of head_dim
    std::vector<int32_t> pos;
    int64_t next = 0;            // total pushed; the oldest kept is at (next - count) % capacity
  };
  const Ring& ring(int layer, int q_head) const;
  int n_heads_, group_, d_;
  int64_t capacity_;
  std::vector<Ring> rings_;  // [layer][q_head]
};

// Keys of one stream as doubles, row-major [cache.size(layer, head)][head_dim] (any KV type).
std::vector<double> stream_keys(const KvCache& cache, int layer, int head);

// out[i] = max of x[j] over |j - i| <= kernel/2 (clipped at both ends): the max-pooling of
// SnapKV/R-KV (F.max_pool1d with stride 1 and padding kernel/2). kernel: odd, >= 1.
std::vector<double> max_pool_centered(const std::vector<double>& x, int64_t kernel);

// SnapKV's importance of each candidate of stream (layer, kv_head), into out[0..n_candidates):
//   Σ_{g < G} maxpool_kernel( Σ_j softmax_r(scale · q_{h,j} · k_r) )   at the candidate's rank,
// h = kv_head·G + g, j over h's recent queries, the softmax over the stream's rows r with
// position <= the query's (causal), pooled over the candidates in row order (protected rows
// take no part: a sink's large weight must not spill onto its neighbours). scale =
// attn_factor² / sqrt(head_dim), as the forward pass. Double precision throughout.
void recent_attention_importance(const KvCache& cache, int layer, int kv_head, const RecentQueries& queries,
                                 const StreamSplit& split, double scale, int64_t kernel, double* out);

// The softmax scale the forward pass uses (mscale² / sqrt(d)).
double attention_scale(const AttentionGeometry& geometry);

}  // namespace triattn
