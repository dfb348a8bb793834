// The gated delta rule, one-step and chunked, on GCC vector types of the width the includer
// chooses, so one text serves every instruction set. The includer defines TRIATTN_GDN_NS (the
// namespace these land in; gated_delta_kernels.h) and TRIATTN_GDN_VEC_BYTES (16 for the
// baseline, 32 for AVX2: the native register, so no vector crosses an ABI).
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/gated_delta_kernels.h"

namespace triattn::ops::TRIATTN_GDN_NS {
namespace {

using vf = float __attribute__((vector_size(TRIATTN_GDN_VEC_BYTES)));
constexpr int kLanes = TRIATTN_GDN_VEC_BYTES / 4;
// Vectors of state columns one decode pass keeps in registers (dk rows of them stay in L1
// between its two passes), and the tile of the chunked form's products: 8 accumulators, half
// of AVX2's registers.
constexpr int kStepVecs = 4;
constexpr int kTileRows = 4;
constexpr int kTileVecs = 2;

vf gdn_load(const float* p) {
  vf v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
void gdn_store(float* p, vf v) { __builtin_memcpy(p, &v, sizeof v); }
float gdn_hsum(vf v) {
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l) s += v[l];
  return s;
}

// e^x for the decays (x <= 0), with e^x < e^-50 taken as zero: such a term sits far below
// float's resolution beside anything written since, and left in, its products end in
// subnormals, which made the chunked form 4x slower on x86 at realistic decays.
float gdn_decay_exp(float x) { return x < -50.0f ? 0.0f : std::exp(x); }

// y = x * scale / sqrt(sum(x^2) + 1e-6): the L2 norm the layer applies to q and k.
void gdn_l2norm(const float* x, int n, float scale, float* y) {
  vf acc = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const vf v = gdn_load(x + i);
    acc += v * v;
  }
  float ss = gdn_hsum(acc);
  for (; i < n; ++i) ss += x[i] * x[i];
  const float f = scale / std::sqrt(ss + 1e-6f);
  for (i = 0; i + kLanes <= n; i += kLanes) gdn_store(y + i, gdn_load(x + i) * f);
  for (; i < n; ++i) y[i] = x[i] * f;
}

// One token on V vectors of columns of one head's state (row stride ld): the column sums
// against k, the delta, then the decayed update and the read-out against q. The strip stays in
// L1 between the two passes, so the state goes through memory once per token.
template <int V>
void gdn_step_strip(const float* k, const float* q, int dk, float decay, float beta,
                    const float* v, float* s, int64_t ld, float* out) {
  vf kv[V] = {};
  for (int i = 0; i < dk; ++i) {
    const float* row = s + i * ld;
#pragma GCC unroll 8
    for (int u = 0; u < V; ++u) kv[u] += k[i] * gdn_load(row + u * kLanes);
  }
  vf delta[V], o[V] = {};
#pragma GCC unroll 8
  for (int u = 0; u < V; ++u) delta[u] = beta * (gdn_load(v + u * kLanes) - decay * kv[u]);
  for (int i = 0; i < dk; ++i) {
    float* row = s + i * ld;
#pragma GCC unroll 8
    for (int u = 0; u < V; ++u) {
      const vf r = decay * gdn_load(row + u * kLanes) + k[i] * delta[u];
      gdn_store(row + u * kLanes, r);
      o[u] += q[i] * r;
    }
  }
#pragma GCC unroll 8
  for (int u = 0; u < V; ++u) gdn_store(out + u * kLanes, o[u]);
}

// The same for one column, for widths that leave a tail.
void gdn_step_column(const float* k, const float* q, int dk, float decay, float beta,
                     const float* v, float* s, int64_t ld, float* out) {
  float kv = 0.0f, o = 0.0f;
  for (int i = 0; i < dk; ++i) kv += k[i] * s[i * ld];
  const float delta = beta * (v[0] - decay * kv);
  for (int i = 0; i < dk; ++i) {
    const float r = decay * s[i * ld] + k[i] * delta;
    s[i * ld] = r;
    o += q[i] * r;
  }
  out[0] = o;
}

void gdn_step_head(const float* k, const float* q, int dk, int dv, float decay, float beta,
                   const float* v, float* s, float* out) {
  int j = 0;
  for (; j + kStepVecs * kLanes <= dv; j += kStepVecs * kLanes)
    gdn_step_strip<kStepVecs>(k, q, dk, decay, beta, v + j, s + j, dv, out + j);
  for (; j + kLanes <= dv; j += kLanes)
    gdn_step_strip<1>(k, q, dk, decay, beta, v + j, s + j, dv, out + j);
  for (; j < dv; ++j) gdn_step_column(k, q, dk, decay, beta, v + j, s + j, dv, out + j);
}

// d = b * (v - e * d) and o = e * o over n floats: the chunk's right-hand sides and the decayed
// read-outs of the starting state.
void gdn_rhs_row(float b, float e, const float* v, float* d, float* o, int n) {
  int j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    gdn_store(d + j, b * (gdn_load(v + j) - e * gdn_load(d + j)));
    gdn_store(o + j, e * gdn_load(o + j));
  }
  for (; j < n; ++j) {
    d[j] = b * (v[j] - e * d[j]);
    o[j] *= e;
  }
}

// R rows x V vectors of Y = y_scale * Y + X M (y_scale 0 overwrites whatever Y held), the
// accumulators in registers.
template <int R, int V>
void gdn_gemm_tile(int inner, const float* x, int64_t ldx, const float* m, int64_t ldm, float* y,
                   int64_t ldy, float y_scale) {
  vf acc[R][V] = {};
  for (int i = 0; i < inner; ++i) {
    vf mi[V];
#pragma GCC unroll 8
    for (int u = 0; u < V; ++u) mi[u] = gdn_load(m + i * ldm + u * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float xr = x[r * ldx + i];
#pragma GCC unroll 8
      for (int u = 0; u < V; ++u) acc[r][u] += xr * mi[u];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int u = 0; u < V; ++u) {
      float* yr = y + r * ldy + u * kLanes;
      gdn_store(yr, y_scale == 0.0f ? acc[r][u] : y_scale * gdn_load(yr) + acc[r][u]);
    }
}

// One output element of the same product, for column tails.
void gdn_gemm_element(int inner, const float* x, const float* m, int64_t ldm, float* y,
                      float y_scale) {
  float acc = 0.0f;
  for (int i = 0; i < inner; ++i) acc += x[i] * m[i * ldm];
  *y = y_scale == 0.0f ? acc : y_scale * *y + acc;
}

template <int R>
void gdn_gemm_rows(int inner, int cols, const float* x, int64_t ldx, const float* m, int64_t ldm,
                   float* y, int64_t ldy, float y_scale) {
  // A single row takes wider tiles: its accumulators are the only independent chains.
  constexpr int V = R == 1 ? 2 * kTileVecs : kTileVecs;
  int j = 0;
  for (; j + V * kLanes <= cols; j += V * kLanes)
    gdn_gemm_tile<R, V>(inner, x, ldx, m + j, ldm, y + j, ldy, y_scale);
  for (; j + kLanes <= cols; j += kLanes)
    gdn_gemm_tile<R, 1>(inner, x, ldx, m + j, ldm, y + j, ldy, y_scale);
  for (; j < cols; ++j)
    for (int r = 0; r < R; ++r)
      gdn_gemm_element(inner, x + r * ldx, m + j, ldm, y + r * ldy + j, y_scale);
}

// Y (rows x cols) = y_scale * Y + X (rows x inner) M (inner x cols), all row-major.
void gdn_gemm(int rows, int inner, int cols, const float* x, int64_t ldx, const float* m,
              int64_t ldm, float* y, int64_t ldy, float y_scale) {
  int r = 0;
  for (; r + kTileRows <= rows; r += kTileRows)
    gdn_gemm_rows<kTileRows>(inner, cols, x + r * ldx, ldx, m, ldm, y + r * ldy, ldy, y_scale);
  for (; r < rows; ++r)
    gdn_gemm_rows<1>(inner, cols, x + r * ldx, ldx, m, ldm, y + r * ldy, ldy, y_scale);
}

// Where one value head's inputs sit in the call's rows.
struct HeadIo {
  const float* q;  // row t at q + t * stride
  const float* k;
  const float* v;
  int64_t stride;
  const float* g;  // token t at g[t * gb_stride]
  const float* beta;
  int64_t gb_stride;
  float* out;  // row t at out + t * out_stride
  int64_t out_stride;
  float* state;  // [dk][dv]
};

HeadIo gdn_head_io(const DeltaCall& c, int h) {
  const DeltaShape& s = c.s;
  const int kh = s.key_head(h);
  const float* row = c.qkv;
  return HeadIo{row + static_cast<int64_t>(kh) * s.head_k_dim,
                row + s.key_dim() + static_cast<int64_t>(kh) * s.head_k_dim,
                row + 2 * static_cast<int64_t>(s.key_dim()) +
                    static_cast<int64_t>(h) * s.head_v_dim,
                c.qkv_stride,
                c.g + h,
                c.beta + h,
                c.gb_stride,
                c.out + static_cast<int64_t>(h) * s.head_v_dim,
                c.out_stride,
                c.state + static_cast<int64_t>(h) * s.head_k_dim * s.head_v_dim};
}

// Scratch of one chunk of n <= kDeltaChunk tokens for one head.
struct ChunkScratch {
  std::vector<float> q, k, kt, delta, a, p;
  float gcum[kDeltaChunk], egcum[kDeltaChunk], etail[kDeltaChunk], beta[kDeltaChunk];
  ChunkScratch(int dk, int dv)
      : q(kDeltaChunk * dk), k(kDeltaChunk * dk), kt(dk * kDeltaChunk), delta(kDeltaChunk * dv),
        a(kDeltaChunk * kDeltaChunk), p(kDeltaChunk * kDeltaChunk) {}
};

// Normalised q and k of tokens [t0, t0 + n) (k also transposed, stride n), the running sums G
// of the log decays inside the chunk, e^G, and e^(G_last - G).
void gdn_chunk_inputs(const HeadIo& io, int64_t t0, int n, int dk, ChunkScratch& sc) {
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  float gsum = 0.0f;
  for (int t = 0; t < n; ++t) {
    const int64_t row = (t0 + t) * io.stride;
    gdn_l2norm(io.q + row, dk, q_scale, sc.q.data() + t * dk);
    gdn_l2norm(io.k + row, dk, 1.0f, sc.k.data() + t * dk);
    for (int i = 0; i < dk; ++i) sc.kt[i * n + t] = sc.k[t * dk + i];
    gsum += io.g[(t0 + t) * io.gb_stride];
    sc.gcum[t] = gsum;
    sc.egcum[t] = gdn_decay_exp(gsum);
    sc.beta[t] = io.beta[(t0 + t) * io.gb_stride];
  }
  for (int t = 0; t < n; ++t) sc.etail[t] = gdn_decay_exp(gsum - sc.gcum[t]);
}

// Y = X KT for the lower triangle of an n x n result (and a few entries past it, up to the
// vector width): the pair products of the chunk, s <= t.
void gdn_pairs_lower(int n, int dk, const float* x, const float* kt, float* y) {
  for (int r = 0; r < n; r += kTileRows) {
    const int rows = std::min(kTileRows, n - r);
    const int cols = std::min(n, (r + rows + kLanes - 1) / kLanes * kLanes);
    if (rows == kTileRows)
      gdn_gemm_rows<kTileRows>(dk, cols, x + r * dk, dk, kt, n, y + r * n, n, 0.0f);
    else
      gdn_gemm(rows, dk, cols, x + r * dk, dk, kt, n, y + r * n, n, 0.0f);
  }
}

// A[t][s] = -beta_t e^(G_t - G_s) k_t.k_s for s < t (negated for the substitution),
// P[t][s] = e^(G_t - G_s) q_t.k_s for s <= t, zero elsewhere.
void gdn_decay_pairs(int n, ChunkScratch& sc) {
  for (int t = 0; t < n; ++t) {
    float* at = sc.a.data() + t * n;
    float* pt = sc.p.data() + t * n;
    for (int s = 0; s <= t; ++s) {
      const float decay = gdn_decay_exp(sc.gcum[t] - sc.gcum[s]);
      at[s] = s < t ? -sc.beta[t] * decay * at[s] : 0.0f;
      pt[s] *= decay;
    }
    std::fill(at + t + 1, at + n, 0.0f);
    std::fill(pt + t + 1, pt + n, 0.0f);
  }
}

// One chunk of one head. With G the running log decay inside the chunk and S0 the state before
// it, the deltas d_t = beta_t (v_t - e^{G_t} S0^T k_t - sum_{s<t} e^{G_t-G_s} (k_t.k_s) d_s) are a
// unit lower-triangular system (solved by forward substitution), after which
//   out_t = e^{G_t} S0^T q_t + sum_{s<=t} e^{G_t-G_s} (q_t.k_s) d_s
//   S     = e^{G_last} S0 + sum_s e^{G_last-G_s} k_s d_s^T.
// Every exponent is <= 0, so nothing overflows however strong the decay.
void gdn_chunk(const HeadIo& io, int64_t t0, int n, int dk, int dv, ChunkScratch& sc) {
  gdn_chunk_inputs(io, t0, n, dk, sc);
  float* d = sc.delta.data();
  float* out0 = io.out + t0 * io.out_stride;
  // The state's read-outs first, while S is still S0.
  gdn_gemm(n, dk, dv, sc.k.data(), dk, io.state, dv, d, dv, 0.0f);
  gdn_gemm(n, dk, dv, sc.q.data(), dk, io.state, dv, out0, io.out_stride, 0.0f);
  for (int t = 0; t < n; ++t)
    gdn_rhs_row(sc.beta[t], sc.egcum[t], io.v + (t0 + t) * io.stride, d + t * dv,
                out0 + t * io.out_stride, dv);
  gdn_pairs_lower(n, dk, sc.k.data(), sc.kt.data(), sc.a.data());
  gdn_pairs_lower(n, dk, sc.q.data(), sc.kt.data(), sc.p.data());
  gdn_decay_pairs(n, sc);
  // Forward substitution, one row at a time: d_t += sum_{s<t} A[t][s] d_s.
  for (int t = 1; t < n; ++t)
    gdn_gemm_rows<1>(t, dv, sc.a.data() + t * n, n, d, dv, d + t * dv, dv, 1.0f);
  // Row tile r of P reaches column r + rows - 1 at most: the rest of its inner sum is zero.
  for (int r = 0; r < n; r += kTileRows) {
    const int rows = std::min(kTileRows, n - r);
    gdn_gemm(rows, r + rows, dv, sc.p.data() + r * n, n, d, dv, out0 + r * io.out_stride,
             io.out_stride, 1.0f);
  }
  // The keys decayed to the chunk's end, transposed, carry the deltas into the state.
  for (int i = 0; i < dk; ++i)
    for (int s = 0; s < n; ++s) sc.kt[i * n + s] *= sc.etail[s];
  gdn_gemm(dk, n, dv, sc.kt.data(), n, d, dv, io.state, dv, sc.egcum[n - 1]);
}

}  // namespace

void recurrent(const DeltaCall& c) {
  const int dk = c.s.head_k_dim, dv = c.s.head_v_dim;
  // The normalised q and k on the stack for the usual head sizes: decode makes this call per
  // layer and token.
  float small[512];
  std::vector<float> large(dk > 256 ? 2 * static_cast<size_t>(dk) : 0);
  float* qn = dk > 256 ? large.data() : small;
  float* kn = qn + dk;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  for (int h = c.h0; h < c.h1; ++h) {
    const HeadIo io = gdn_head_io(c, h);
    for (int64_t t = 0; t < c.T; ++t) {
      gdn_l2norm(io.q + t * io.stride, dk, q_scale, qn);
      gdn_l2norm(io.k + t * io.stride, dk, 1.0f, kn);
      const float decay = gdn_decay_exp(io.g[t * io.gb_stride]);
      gdn_step_head(kn, qn, dk, dv, decay, io.beta[t * io.gb_stride], io.v + t * io.stride,
                    io.state, io.out + t * io.out_stride);
    }
  }
}

void chunked(const DeltaCall& c) {
  const int dk = c.s.head_k_dim, dv = c.s.head_v_dim;
  ChunkScratch sc(dk, dv);
  for (int h = c.h0; h < c.h1; ++h) {
    const HeadIo io = gdn_head_io(c, h);
    for (int64_t t0 = 0; t0 < c.T; t0 += kDeltaChunk) {
      const int n = static_cast<int>(std::min<int64_t>(kDeltaChunk, c.T - t0));
      gdn_chunk(io, t0, n, dk, dv, sc);
    }
  }
}

}  // namespace triattn::ops::TRIATTN_GDN_NS
