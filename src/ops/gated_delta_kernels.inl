// The gated delta rule, one-step and chunked, written as plain loops of fixed width that the
// compiler vectorises for whatever instruction set the including file is built for. The
// includer defines TRIATTN_GDN_NS (the namespace these land in; gated_delta_kernels.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/gated_delta_kernels.h"

namespace triattn::ops::TRIATTN_GDN_NS {
namespace {

// Columns handled together: fixed so the inner loops have a constant trip count (GCC's -O2
// cost model vectorises only those) and their accumulators stay in registers.
constexpr int kStrip = 32;
constexpr int kRows = 4;

// y = x * scale / sqrt(sum(x^2) + 1e-6): the L2 norm the layer applies to q and k.
void gdn_l2norm(const float* x, int n, float scale, float* y) {
  float ss = 0.0f;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const float f = scale / std::sqrt(ss + 1e-6f);
  for (int i = 0; i < n; ++i) y[i] = x[i] * f;
}

// One token on W columns of one head's state (row stride ld): the column sums against k, the
// delta, then the decayed update and the read-out against q. The strip (dk x W floats) stays
// in L1 between the two passes, so the state goes through memory once per token.
template <int W>
void gdn_step_strip(const float* __restrict k, const float* __restrict q, int dk, float decay,
                    float beta, const float* __restrict v, float* __restrict s, int64_t ld,
                    float* __restrict out) {
  float kv[W] = {};
  for (int i = 0; i < dk; ++i) {
    const float ki = k[i];
    const float* row = s + i * ld;
    for (int l = 0; l < W; ++l) kv[l] += ki * row[l];
  }
  float delta[W];
  for (int l = 0; l < W; ++l) delta[l] = beta * (v[l] - decay * kv[l]);
  float o[W] = {};
  for (int i = 0; i < dk; ++i) {
    const float ki = k[i], qi = q[i];
    float* row = s + i * ld;
    for (int l = 0; l < W; ++l) {
      const float r = decay * row[l] + ki * delta[l];
      row[l] = r;
      o[l] += qi * r;
    }
  }
  for (int l = 0; l < W; ++l) out[l] = o[l];
}

void gdn_step_head(const float* k, const float* q, int dk, int dv, float decay, float beta,
                   const float* v, float* s, float* out) {
  int j = 0;
  for (; j + kStrip <= dv; j += kStrip)
    gdn_step_strip<kStrip>(k, q, dk, decay, beta, v + j, s + j, dv, out + j);
  for (; j < dv; ++j) gdn_step_strip<1>(k, q, dk, decay, beta, v + j, s + j, dv, out + j);
}

// y += a * x over n floats.
void gdn_axpy(float a, const float* __restrict x, float* __restrict y, int n) {
  int j = 0;
  for (; j + kStrip <= n; j += kStrip)
    for (int l = 0; l < kStrip; ++l) y[j + l] += a * x[j + l];
  for (; j < n; ++j) y[j] += a * x[j];
}

// R x W block of Y = y_scale * Y + X M (y_scale 0 overwrites whatever Y held).
template <int R, int W>
void gdn_gemm_block(int inner, const float* __restrict x, int64_t ldx, const float* __restrict m,
                    int64_t ldm, float* __restrict y, int64_t ldy, float y_scale) {
  float acc[R][W] = {};
  for (int i = 0; i < inner; ++i) {
    const float* mi = m + i * ldm;
    for (int r = 0; r < R; ++r) {
      const float xr = x[r * ldx + i];
      for (int l = 0; l < W; ++l) acc[r][l] += xr * mi[l];
    }
  }
  for (int r = 0; r < R; ++r) {
    float* yr = y + r * ldy;
    if (y_scale == 0.0f) {
      for (int l = 0; l < W; ++l) yr[l] = acc[r][l];
    } else {
      for (int l = 0; l < W; ++l) yr[l] = y_scale * yr[l] + acc[r][l];
    }
  }
}

template <int R>
void gdn_gemm_rows(int inner, int cols, const float* x, int64_t ldx, const float* m, int64_t ldm,
                   float* y, int64_t ldy, float y_scale) {
  int j = 0;
  for (; j + kStrip <= cols; j += kStrip)
    gdn_gemm_block<R, kStrip>(inner, x, ldx, m + j, ldm, y + j, ldy, y_scale);
  for (; j < cols; ++j) gdn_gemm_block<R, 1>(inner, x, ldx, m + j, ldm, y + j, ldy, y_scale);
}

// Y (rows x cols) = y_scale * Y + X (rows x inner) M (inner x cols), all row-major.
void gdn_gemm(int rows, int inner, int cols, const float* x, int64_t ldx, const float* m,
              int64_t ldm, float* y, int64_t ldy, float y_scale) {
  int r = 0;
  for (; r + kRows <= rows; r += kRows)
    gdn_gemm_rows<kRows>(inner, cols, x + r * ldx, ldx, m, ldm, y + r * ldy, ldy, y_scale);
  for (; r < rows; ++r) gdn_gemm_rows<1>(inner, cols, x + r * ldx, ldx, m, ldm, y + r * ldy, ldy, y_scale);
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
                row + 2 * static_cast<int64_t>(s.key_dim()) + static_cast<int64_t>(h) * s.head_v_dim,
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
  std::vector<float> q, k, kt, delta, a, p, gcum;
  ChunkScratch(int dk, int dv)
      : q(kDeltaChunk * dk), k(kDeltaChunk * dk), kt(dk * kDeltaChunk), delta(kDeltaChunk * dv),
        a(kDeltaChunk * kDeltaChunk), p(kDeltaChunk * kDeltaChunk), gcum(kDeltaChunk) {}
};

// Normalised q and k of tokens [t0, t0 + n) (k also transposed, stride n), and the running sums
// of the log decays inside the chunk.
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
  const float* G = sc.gcum.data();
  float* d = sc.delta.data();
  float* out0 = io.out + t0 * io.out_stride;
  // The state's read-outs first, while S is still S0.
  gdn_gemm(n, dk, dv, sc.k.data(), dk, io.state, dv, d, dv, 0.0f);
  gdn_gemm(n, dk, dv, sc.q.data(), dk, io.state, dv, out0, io.out_stride, 0.0f);
  for (int t = 0; t < n; ++t) {
    const float e = std::exp(G[t]);
    const float b = io.beta[(t0 + t) * io.gb_stride];
    const float* v = io.v + (t0 + t) * io.stride;
    float* dt = d + t * dv;
    for (int j = 0; j < dv; ++j) dt[j] = b * (v[j] - e * dt[j]);
    float* ot = out0 + t * io.out_stride;
    for (int j = 0; j < dv; ++j) ot[j] *= e;
  }
  // k_t.k_s and q_t.k_s for every pair, then the decays and masks.
  gdn_gemm(n, dk, n, sc.k.data(), dk, sc.kt.data(), n, sc.a.data(), n, 0.0f);
  gdn_gemm(n, dk, n, sc.q.data(), dk, sc.kt.data(), n, sc.p.data(), n, 0.0f);
  for (int t = 0; t < n; ++t) {
    const float b = io.beta[(t0 + t) * io.gb_stride];
    float* at = sc.a.data() + t * n;
    float* pt = sc.p.data() + t * n;
    for (int s = 0; s < n; ++s) {
      const float decay = s <= t ? std::exp(G[t] - G[s]) : 0.0f;
      at[s] = s < t ? b * decay * at[s] : 0.0f;
      pt[s] = decay * pt[s];
    }
  }
  for (int t = 1; t < n; ++t) {
    float* dt = d + t * dv;
    const float* at = sc.a.data() + t * n;
    for (int s = 0; s < t; ++s) gdn_axpy(-at[s], d + s * dv, dt, dv);
  }
  gdn_gemm(n, n, dv, sc.p.data(), n, d, dv, out0, io.out_stride, 1.0f);
  // The keys decayed to the chunk's end, transposed, carry the deltas into the state.
  const float g_last = G[n - 1];
  for (int i = 0; i < dk; ++i)
    for (int s = 0; s < n; ++s) sc.kt[i * n + s] *= std::exp(g_last - G[s]);
  gdn_gemm(dk, n, dv, sc.kt.data(), n, d, dv, io.state, dv, std::exp(g_last));
}

}  // namespace

void recurrent(const DeltaCall& c) {
  const int dk = c.s.head_k_dim, dv = c.s.head_v_dim;
  std::vector<float> qk(2 * static_cast<size_t>(dk));
  float* qn = qk.data();
  float* kn = qk.data() + dk;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  for (int h = c.h0; h < c.h1; ++h) {
    const HeadIo io = gdn_head_io(c, h);
    for (int64_t t = 0; t < c.T; ++t) {
      gdn_l2norm(io.q + t * io.stride, dk, q_scale, qn);
      gdn_l2norm(io.k + t * io.stride, dk, 1.0f, kn);
      const float decay = std::exp(io.g[t * io.gb_stride]);
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
