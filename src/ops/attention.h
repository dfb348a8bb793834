#pragma once
// Causal attention over one KV stream (the kept tokens of a (layer, KV head)). Keys/values
// are rows of head_dim in F32, F16 or Q8_0 (ops/kv_rows.h), read in place; only keys whose absolute position is <= the query's
// take part. Reads the kept KV only: cost is O(kept tokens), not history.
//
// attend() takes every query that reads the same stream at once — the query heads of one
// GQA group, and/or several tokens of one sequence — so each key and value row is read
// from memory once per call, not once per query. Softmax is computed online over blocks of
// keys (running max and sum, output rescaled as the max grows), so no score matrix over
// the whole context is ever materialised unless the caller asks for the weights.
#include <cstdint>
#include <limits>

#include "core/dtype.h"

namespace triattn {

struct AttentionStream {
  DType type;            // F32, F16 or Q8_0
  const void* keys;      // [n, head_dim]
  const void* values;    // [n, head_dim]
  const int32_t* pos;    // [n]
  int64_t n;
  int head_dim;
  // Sliding-window layers: only keys with q_pos - pos < window take part; 0 = no window.
  int32_t window = 0;
  // Gemma 2: each score s becomes softcap * tanh(s / softcap) before the softmax; 0 = none.
  float softcap = 0;
  // gpt-oss: null, or one sink logit per query of the attend() call (its head's): query j's
  // softmax runs over [scores, sinks[j]] and the sink's column is dropped, so the denominator
  // gains exp(sinks[j]) and the weights sum to less than 1. The kernels start the online
  // softmax from the sink (running max sinks[j], running sum 1) instead of an empty state.
  const float* sinks = nullptr;
  // A bound on pos[0..n) known to the caller (the KV cache's max_position), or INT32_MAX.
  // When every query of a call is at or after it (decode), no key is masked and the kernels
  // skip the per-block pass over the positions: at depth 16384 that pass stalled on memory
  // for ~2% of decode's time (the positions are a third stream beside the K and V rows,
  // and no prefetch covers them).
  int32_t max_pos = std::numeric_limits<int32_t>::max();
  // How many interleaved parts each score q·k is summed in by the 512-bit kernel: 1, or 2
  // (row vector i into part i % 2, the parts added, then the lanes). Every query of a stream
  // is summed alike whatever shares its call, so the choice belongs to the stream, i.e. to
  // the model: forward.cpp takes 2 where a decode call has a GQA group of 1 or 2 queries.
  // Such a call's score tile has 4-8 sums, each a chain of dependent FMAs (8 of them at
  // head_dim 128) that stops at any of its key row's loads still in flight; two parts halve
  // the chains (docs/benchmarks.md, "Attention kernel"). Tiles of 4 queries have 16 chains
  // already and two parts cost them, so groups of 4 or more keep 1. The other kernels sum in
  // one part whatever this says.
  int score_parts = 1;
};

// For each query j < n_q:
//   out[j][0..head_dim) = Σ_i softmax_i(cap(scale · q[j]·k_i)) v_i over i with pos[i] <= q_pos[j]
//   (and q_pos[j] - pos[i] < s.window when the stream has a window; cap is the identity
//   unless s.softcap > 0)
// (all zeros when no key qualifies). q[j] and out[j] point to head_dim floats each.
// weights: null, or n_q rows of s.n floats, row j at weights + j * s.n, receiving query j's
// softmax weights (0 for masked keys) — what attention-observing policies read.
void attend(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
            float scale, float* const* out, float* weights);

// One query; scores: scratch of at least s.n floats that receives the weights.
void attend_one_head(const float* q, const AttentionStream& s, int32_t query_pos, float scale,
                     float* scores, float* out);

// Chunks. A stream of more than kChunkKeys keys is attended in chunks of kChunkKeys keys
// (the last one shorter): each chunk's softmax is computed on its own, giving per query an
// output normalised over the chunk, out_c, its largest score m_c and its sum l_c, and the
// chunks merge exactly: out = Σ_c w_c out_c / Σ_c w_c with w_c = l_c exp(m_c - max_c m_c).
// The chunks exist so that the chunks of one stream can run on different threads when a
// step has fewer streams than threads (decode of one sequence whose model has fewer KV heads
// than the machine has cores); they are fixed by the stream's length alone, and attend()
// itself goes through them, so a query's output is the same bit for bit whether its chunks
// ran on one thread or on many, and whatever else shares the step. Chunk length: shorter
// chunks cost more per call (docs/benchmarks.md, "Attention kernel"); at 4096 a TriAttention cache at its default
// budget (2048 + 128) stays one chunk, and a 16-thread machine gets 32 pieces of work per
// 8-KV-head layer at depth 16384.
constexpr int64_t kChunkKeys = 4096;
// Chunks of a stream of n keys (1 for n <= kChunkKeys).
int64_t attention_chunks(int64_t n);
// Floats of one chunk's result for n_q queries of head_dim: out_c [n_q][head_dim], then
// (m_c, l_c) per query.
size_t attention_partial_floats(int n_q, int head_dim);
// Attends to chunk c of s only (keys [c kChunkKeys, ...)), writing its result to partial.
// The gpt-oss sinks belong to chunk 0. A chunk with no key a query may see gives l_c = 0.
void attend_chunk(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
                  int64_t c, float scale, float* partial);
// Merges the n_chunks results at partials (chunk c at partials + c * attention_partial_floats)
// into out[j] (head_dim floats each). One chunk: its output as it is. factors: null, or
// n_chunks x n_q floats receiving w_c / Σ_c w_c (what chunk c's own weights are scaled by).
void merge_attention_chunks(int n_q, int head_dim, int64_t n_chunks, const float* partials,
                            float* const* out, float* factors = nullptr);

namespace attention_detail {
// Keys per online-softmax block. The kernel prefetches each phase's rows a whole block ahead
// (attention_simd.inl), so three blocks of rows share L1 at once: the block's K rows, its V
// rows, and the next block's K rows. block_keys(row) is the most keys, a multiple of 16 from
// 32 to kMaxBlock, whose rows fit in 12 KiB, so the three take 36 KiB of a 48 KiB L1D and
// leave room for the queries, scores and outputs. At 64 keys, F16 rows of head dim 128 filled
// it (3 x 16 KiB), which reads as prefetched rows evicted before use; 48 keys a block was
// faster and 32 lost (too little lead; docs/benchmarks.md, "Attention kernel"). Rows of head dim
// 64 and Q8_0 rows of head dim 128 keep 64 keys; rows of 512 bytes (F32 of head dim 128, F16 of
// 256) go from 64 to 32 (96 KiB of L1 footprint to 48).
constexpr int kMaxBlock = 64;
constexpr int block_keys(size_t row_bytes) {
  int keys = kMaxBlock;
  while (keys > 32 && static_cast<size_t>(keys) * row_bytes > 12 * 1024) keys -= 16;
  return keys;
}
// The portable kernel (any head_dim); attend() uses it where no SIMD one applies.
// state: null, or 2 n_q floats receiving each query's largest score and softmax sum (m, l:
// what merge_attention_chunks weighs a chunk by; m = -inf, l = 0 where no key is visible and
// there is no sink).
void attend_scalar(const float* const* q, const int32_t* q_pos, int n_q,
                   const AttentionStream& s, float scale, float* const* out, float* weights, float* state);
#if defined(__x86_64__)
// AVX2+FMA+F16C; head_dim must be a multiple of 8. In attention_avx2.cpp.
void attend_avx2(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
                 float scale, float* const* out, float* weights, float* state);
// AVX-512; head_dim must be a multiple of 16. In attention_avx512.cpp.
void attend_avx512(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
                   float scale, float* const* out, float* weights, float* state);
#endif
#if defined(__aarch64__)
// AArch64 Advanced SIMD; head_dim must be a multiple of 4. In attention_neon.cpp.
void attend_neon(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
                 float scale, float* const* out, float* weights, float* state);
#endif
}  // namespace attention_detail

}  // namespace triattn
