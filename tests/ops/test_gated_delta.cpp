// The Gated DeltaNet kernels (ops/gated_delta.h) against the double references of reference.h:
// the conv and its rolling state, the delta rule in both forms on every ISA, split calls and
// head ranges, the key-head mapping, the gated norm and the decay helpers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "ops/gated_delta.h"
#include "ops/ops.h"
#include "ops/reference.h"
#include "ops_test_util.h"

namespace triattn::ops {
namespace {

using testing::IsaGuard;
using testing::random_floats;

// max |a - b| over max |b|: the relative error of a whole tensor.
double max_rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double err = 0.0, mag = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(a[i]) - b[i]));
    mag = std::max(mag, std::fabs(static_cast<double>(b[i])));
  }
  return mag > 0.0 ? err / mag : err;
}

// One layer's random inputs for T tokens: conv-output rows, decays in [-3, -0.001], strengths
// in (0, 1), and a random starting state.
struct DeltaInputs {
  DeltaShape s;
  int64_t T;
  std::vector<float> qkv, g, beta, state;

  DeltaInputs(const DeltaShape& shape, int64_t tokens, uint32_t seed, float g_min = -3.0f)
      : s(shape), T(tokens) {
    qkv = random_floats(static_cast<size_t>(T * s.conv_dim()), seed);
    std::mt19937 rng(seed + 1);
    std::uniform_real_distribution<float> decay(g_min, -0.001f), strength(0.02f, 0.98f);
    for (int64_t i = 0; i < T * s.n_v_heads; ++i) {
      g.push_back(decay(rng));
      beta.push_back(strength(rng));
    }
    state = random_floats(static_cast<size_t>(s.state_floats()), seed + 2, 0.1f);
  }
};

// Output and final state of one form run on tokens [t0, t1) of `in`, from `state`.
using DeltaForm = void (*)(const DeltaShape&, int64_t, const float*, int64_t, const float*,
                           const float*, int64_t, float*, float*, int64_t, int, int);

void run_delta(DeltaForm form, const DeltaInputs& in, int64_t t0, int64_t t1,
               std::vector<float>& state, std::vector<float>& out, int h0, int h1) {
  const int cd = in.s.conv_dim(), vd = in.s.value_dim();
  out.resize(static_cast<size_t>(in.T * vd));
  form(in.s, t1 - t0, in.qkv.data() + t0 * cd, cd, in.g.data() + t0 * in.s.n_v_heads,
       in.beta.data() + t0 * in.s.n_v_heads, in.s.n_v_heads, state.data(),
       out.data() + t0 * vd, vd, h0, h1);
}

struct DeltaResult {
  std::vector<float> out, state;
};

DeltaResult delta_all(DeltaForm form, const DeltaInputs& in) {
  DeltaResult r{{}, in.state};
  run_delta(form, in, 0, in.T, r.state, r.out, 0, in.s.n_v_heads);
  return r;
}

DeltaResult delta_reference(const DeltaInputs& in) {
  DeltaResult r{std::vector<float>(static_cast<size_t>(in.T * in.s.value_dim())), in.state};
  ref::gated_delta_rule(in.s, in.T, in.qkv.data(), in.s.conv_dim(), in.g.data(),
                        in.beta.data(), in.s.n_v_heads, r.state.data(), r.out.data(),
                        in.s.value_dim());
  return r;
}

// Small heads whose widths leave SIMD tails (48 = one 32-column strip + 16).
const DeltaShape kSmall{2, 4, 40, 48, false};
// Qwen3.5-9B's linear-attention layers, shrunk in head count only.
const DeltaShape kQwenHeads{2, 4, 128, 128, false};

TEST(GatedDeltaConv, MatchesReference) {
  const int C = 37, K = 4;
  const int64_t T = 9;
  const auto x = random_floats(T * C, 1), w = random_floats(C * K, 2, 0.5f);
  auto state = random_floats((K - 1) * C, 3), state_ref = state;
  std::vector<float> y(T * C), y_ref(T * C);
  causal_conv1d_silu(T, C, K, x.data(), C, w.data(), state.data(), y.data(), C);
  ref::causal_conv1d_silu(T, C, K, x.data(), C, w.data(), state_ref.data(), y_ref.data(), C);
  EXPECT_LT(max_rel_error(y, y_ref), 1e-6);
  EXPECT_EQ(state, state_ref);
  // The state is the last K-1 input rows.
  EXPECT_TRUE(std::equal(state.begin(), state.end(), x.begin() + (T - (K - 1)) * C));
}

TEST(GatedDeltaConv, FreshStateIsZeroHistory) {
  // One channel, taps 1, 2, 3, 4 (the last on the current row): y[t] = silu(x[t-3] + 2 x[t-2] +
  // 3 x[t-1] + 4 x[t]) with zeros before the start.
  const float w[4] = {1, 2, 3, 4};
  const float x[3] = {1.0f, -0.5f, 0.25f};
  float state[3] = {0, 0, 0}, y[3];
  causal_conv1d_silu(3, 1, 4, x, 1, w, state, y, 1);
  const auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
  EXPECT_NEAR(y[0], silu(4.0), 1e-6);
  EXPECT_NEAR(y[1], silu(3.0 - 2.0), 1e-6);
  EXPECT_NEAR(y[2], silu(2.0 - 1.5 + 1.0), 1e-6);
  EXPECT_EQ(state[0], 1.0f);
  EXPECT_EQ(state[2], 0.25f);
}

TEST(GatedDeltaConv, PiecesEqualOneCall) {
  const int C = 19, K = 4;
  const int64_t T = 1 + 3 + 5 + 1 + 2 + 7;
  const auto x = random_floats(T * C, 4), w = random_floats(C * K, 5, 0.5f);
  const auto state0 = random_floats((K - 1) * C, 6);
  auto state_all = state0;
  std::vector<float> y_all(T * C), y_pieces(T * C, NAN);
  causal_conv1d_silu(T, C, K, x.data(), C, w.data(), state_all.data(), y_all.data(), C);
  auto state = state0;
  int64_t t = 0;
  for (int64_t piece : {1, 3, 5, 1, 2, 7}) {
    causal_conv1d_silu(piece, C, K, x.data() + t * C, C, w.data(), state.data(),
                       y_pieces.data() + t * C, C);
    t += piece;
  }
  EXPECT_EQ(y_pieces, y_all);
  EXPECT_EQ(state, state_all);
}

TEST(GatedDeltaConv, StridedRows) {
  const int C = 8, K = 4;
  const int64_t T = 5, xs = 13, ys = 11;
  const auto x = random_floats(T * xs, 7), w = random_floats(C * K, 8);
  std::vector<float> state(3 * C, 0.0f), state_ref = state, y(T * ys, 0.0f), y_ref(T * C);
  causal_conv1d_silu(T, C, K, x.data(), xs, w.data(), state.data(), y.data(), ys);
  std::vector<float> xc(T * C);
  for (int64_t t = 0; t < T; ++t) std::copy_n(x.data() + t * xs, C, xc.data() + t * C);
  ref::causal_conv1d_silu(T, C, K, xc.data(), C, w.data(), state_ref.data(), y_ref.data(), C);
  for (int64_t t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) EXPECT_NEAR(y[t * ys + c], y_ref[t * C + c], 1e-6);
  EXPECT_EQ(state, state_ref);
}

TEST(GatedDeltaRule, BothFormsMatchReferenceOnEveryIsa) {
  // The third shape: key heads past 256 (scratch off the stack), tiled, a 20-wide value head.
  for (const DeltaShape& s : {kSmall, kQwenHeads, DeltaShape{1, 2, 264, 20, true}}) {
    const DeltaInputs in(s, 150, 11);
    const DeltaResult want = delta_reference(in);
    for (Isa isa : supported_isas()) {
      IsaGuard guard(isa);
      SCOPED_TRACE(::testing::Message() << isa_name(isa) << " dk " << s.head_k_dim);
      const DeltaResult rec = delta_all(gated_delta_rule_recurrent, in);
      const DeltaResult chk = delta_all(gated_delta_rule_chunked, in);
      EXPECT_LT(max_rel_error(rec.out, want.out), 1e-4);
      EXPECT_LT(max_rel_error(rec.state, want.state), 1e-4);
      EXPECT_LT(max_rel_error(chk.out, want.out), 1e-4);
      EXPECT_LT(max_rel_error(chk.state, want.state), 1e-4);
    }
  }
}

TEST(GatedDeltaRule, ChunkedEqualsOneStepForEveryLength) {
  const DeltaInputs all(kSmall, 200, 21);
  for (int64_t T = 1; T <= 200; ++T) {
    SCOPED_TRACE(::testing::Message() << "T " << T);
    DeltaInputs in = all;
    in.T = T;
    const DeltaResult rec = delta_all(gated_delta_rule_recurrent, in);
    const DeltaResult chk = delta_all(gated_delta_rule_chunked, in);
    ASSERT_LT(max_rel_error(chk.out, rec.out), 1e-4);
    ASSERT_LT(max_rel_error(chk.state, rec.state), 1e-4);
  }
}

TEST(GatedDeltaRule, QwenHeadsChunkedEqualsOneStep) {
  const DeltaInputs in(kQwenHeads, 257, 22);
  const DeltaResult rec = delta_all(gated_delta_rule_recurrent, in);
  const DeltaResult chk = delta_all(gated_delta_rule_chunked, in);
  EXPECT_LT(max_rel_error(chk.out, rec.out), 1e-4);
  EXPECT_LT(max_rel_error(chk.state, rec.state), 1e-4);
  // The state carries information: the last output is not just this token's value.
  EXPECT_GT(max_rel_error(rec.state, in.state), 0.5);
}

TEST(GatedDeltaRule, StrongDecaysMatchReference) {
  // Decays down to -60 per token: running sums inside a chunk reach thousands, where the
  // chunked form's decay factors underflow (and are flushed to zero below e^-50).
  const DeltaInputs in(kSmall, 150, 25, -60.0f);
  const DeltaResult want = delta_reference(in);
  for (DeltaForm form : {gated_delta_rule_recurrent, gated_delta_rule_chunked}) {
    const DeltaResult got = delta_all(form, in);
    EXPECT_LT(max_rel_error(got.out, want.out), 1e-4);
    EXPECT_LT(max_rel_error(got.state, want.state), 1e-4);
  }
}

TEST(GatedDeltaRule, SplitCallsEqualOneCall) {
  // Pieces that take both forms (under 8 tokens: one-step), chunk boundaries falling anywhere.
  const DeltaInputs in(kSmall, 201, 31);
  const DeltaResult whole = delta_all(gated_delta_rule, in);
  const DeltaResult want = delta_reference(in);
  for (const std::vector<int64_t>& pieces :
       {std::vector<int64_t>{70, 1, 130}, std::vector<int64_t>{3, 64, 5, 129}}) {
    std::vector<float> state = in.state, out;
    int64_t t = 0;
    for (int64_t piece : pieces) {
      run_delta(gated_delta_rule, in, t, t + piece, state, out, 0, kSmall.n_v_heads);
      t += piece;
    }
    ASSERT_EQ(t, in.T);
    EXPECT_LT(max_rel_error(out, whole.out), 1e-4);
    EXPECT_LT(max_rel_error(state, whole.state), 1e-4);
    EXPECT_LT(max_rel_error(out, want.out), 1e-4);
    EXPECT_LT(max_rel_error(state, want.state), 1e-4);
  }
}

TEST(GatedDeltaRule, HeadRangesEqualFullCall) {
  const DeltaInputs in(kSmall, 90, 41);
  for (DeltaForm form : {gated_delta_rule_recurrent, gated_delta_rule_chunked}) {
    const DeltaResult whole = delta_all(form, in);
    std::vector<float> state = in.state, out;
    for (auto [h0, h1] : {std::pair{2, 4}, std::pair{0, 1}, std::pair{1, 2}, std::pair{3, 3}})
      run_delta(form, in, 0, in.T, state, out, h0, h1);
    EXPECT_EQ(out, whole.out);
    EXPECT_EQ(state, whole.state);
  }
  // A range leaves the other heads' state alone.
  std::vector<float> state = in.state, out;
  run_delta(gated_delta_rule, in, 0, in.T, state, out, 1, 2);
  const int64_t per_head = kSmall.head_k_dim * kSmall.head_v_dim;
  EXPECT_TRUE(std::equal(state.begin(), state.begin() + per_head, in.state.begin()));
  EXPECT_FALSE(std::equal(state.begin() + per_head, state.begin() + 2 * per_head,
                          in.state.begin() + per_head));
  EXPECT_TRUE(
      std::equal(state.begin() + 2 * per_head, state.end(), in.state.begin() + 2 * per_head));
}

TEST(GatedDeltaRule, HeadRangesOnThreads) {
  // The way a forward pass calls it: value heads split across a pool, each call on its own
  // range of the same state and output (no shared scratch).
  DeltaShape s = kSmall;
  s.n_k_heads = 4;
  s.n_v_heads = 12;
  const DeltaInputs in(s, 100, 45);
  const DeltaResult whole = delta_all(gated_delta_rule, in);
  ThreadPool pool(3);
  for (int64_t grain : {1, 2, 5}) {
    std::vector<float> state = in.state, out(in.T * s.value_dim());
    pool.parallel_for(
        s.n_v_heads,
        [&](int64_t h0, int64_t h1, int) {
          gated_delta_rule(s, in.T, in.qkv.data(), s.conv_dim(), in.g.data(), in.beta.data(),
                           s.n_v_heads, state.data(), out.data(), s.value_dim(),
                           static_cast<int>(h0), static_cast<int>(h1));
        },
        grain);
    EXPECT_EQ(out, whole.out);
    EXPECT_EQ(state, whole.state);
  }
}

TEST(GatedDeltaRule, KeyHeadMapping) {
  // Four value heads on two key heads: grouped reads key heads 0 0 1 1, tiled 0 1 0 1.
  DeltaShape grouped = kSmall, tiled = kSmall;
  tiled.v_heads_tiled = true;
  EXPECT_EQ(grouped.key_head(1), 0);
  EXPECT_EQ(tiled.key_head(1), 1);
  EXPECT_EQ(grouped.key_head(2), 1);
  EXPECT_EQ(tiled.key_head(2), 0);
  DeltaInputs gi(grouped, 70, 51), ti(tiled, 70, 51);
  for (DeltaForm form : {gated_delta_rule_recurrent, gated_delta_rule_chunked}) {
    const DeltaResult go = delta_all(form, gi), to = delta_all(form, ti);
    EXPECT_LT(max_rel_error(go.out, delta_reference(gi).out), 1e-4);
    EXPECT_LT(max_rel_error(to.out, delta_reference(ti).out), 1e-4);
    // Value heads 1 and 2 read different keys under the two mappings; 0 and 3 the same.
    const int dv = kSmall.head_v_dim;
    double diff_12 = 0.0, diff_03 = 0.0;
    for (int64_t t = 0; t < gi.T; ++t)
      for (int j = 0; j < dv; ++j) {
        const int64_t r = t * kSmall.value_dim();
        diff_12 = std::max<double>(diff_12, std::fabs(go.out[r + dv + j] - to.out[r + dv + j]));
        diff_03 = std::max<double>(diff_03, std::fabs(go.out[r + j] - to.out[r + j]));
      }
    EXPECT_GT(diff_12, 1e-2);
    EXPECT_EQ(diff_03, 0.0);
  }
}

TEST(GatedDeltaRule, LeavesInputsIntact) {
  const DeltaInputs in(kSmall, 80, 61);
  for (DeltaForm form : {gated_delta_rule_recurrent, gated_delta_rule_chunked}) {
    DeltaInputs copy = in;
    std::vector<float> out(in.T * in.s.value_dim());
    form(copy.s, copy.T, copy.qkv.data(), copy.s.conv_dim(), copy.g.data(), copy.beta.data(),
         copy.s.n_v_heads, copy.state.data(), out.data(), copy.s.value_dim(), 0, copy.s.n_v_heads);
    EXPECT_EQ(copy.qkv, in.qkv);
    EXPECT_EQ(copy.g, in.g);
    EXPECT_EQ(copy.beta, in.beta);
  }
}

TEST(GatedDeltaRule, OneTokenByHand) {
  // dk = dv = 2, state zero: S = beta k v^T after one token, out = S^T q = beta (q.k) v with q
  // and k normalised (q also by 1/sqrt(2)).
  const DeltaShape s{1, 1, 2, 2, false};
  const float qkv[6] = {3.0f, 4.0f, 1.0f, 0.0f, 2.0f, -1.0f};
  const float g = -0.5f, beta = 0.25f;
  std::vector<float> state(4, 0.0f), out(2);
  gated_delta_rule(s, 1, qkv, 6, &g, &beta, 1, state.data(), out.data(), 2, 0, 1);
  const double qk = 0.6 / std::sqrt(2.0) * (5.0 / std::sqrt(25.0 + 1e-6)) / std::sqrt(1.0 + 1e-6);
  EXPECT_NEAR(out[0], 0.25 * qk * 2.0, 1e-6);
  EXPECT_NEAR(out[1], 0.25 * qk * -1.0, 1e-6);
  EXPECT_NEAR(state[0], 0.5, 1e-6);   // k = (1, 0): row 0 holds beta v
  EXPECT_NEAR(state[1], -0.25, 1e-6);
  EXPECT_EQ(state[2], 0.0f);
}

TEST(GatedDeltaRmsNorm, MatchesDefinition) {
  const int n = 128;
  const auto x = random_floats(n, 71), z = random_floats(n, 72), w = random_floats(n, 73);
  std::vector<float> y(n), y_ref(n);
  gated_rmsnorm(x.data(), z.data(), w.data(), n, 1e-6f, y.data());
  ref::gated_rmsnorm(x.data(), z.data(), w.data(), n, 1e-6f, y_ref.data());
  EXPECT_LT(max_rel_error(y, y_ref), 1e-6);
  // By hand: x = (3, 4): rms = sqrt(12.5); z = 0 gates to zero, z = 2 by 2 sigmoid(2).
  const float x2[2] = {3, 4}, z2[2] = {0, 2}, w2[2] = {1, 0.5f};
  float y2[2];
  gated_rmsnorm(x2, z2, w2, 2, 0.0f, y2);
  EXPECT_EQ(y2[0], 0.0f);
  EXPECT_NEAR(y2[1], 4.0 / std::sqrt(12.5) * 0.5 * 2.0 / (1.0 + std::exp(-2.0)), 1e-6);
}

TEST(GatedDeltaHelpers, SoftplusDecayAndBeta) {
  EXPECT_NEAR(delta_softplus(0.0f), std::log(2.0), 1e-7);
  EXPECT_NEAR(delta_softplus(-30.0f), std::exp(-30.0), 1e-20);
  EXPECT_NEAR(delta_softplus(5.0f), std::log1p(std::exp(5.0)), 1e-5);
  // Large inputs stay finite and exact, where log(1 + exp(x)) would overflow to inf.
  EXPECT_EQ(delta_softplus(100.0f), 100.0f);
  EXPECT_EQ(delta_softplus(1e30f), 1e30f);
  EXPECT_NEAR(delta_softplus(20.5f), 20.5f, 1e-5);
  // g = -exp(A_log) * softplus(a + dt_bias).
  const float a_log = 0.7f, a = 0.3f, dt_bias = -1.2f;
  EXPECT_NEAR(delta_decay(a, dt_bias, -std::exp(a_log)),
              -std::exp(0.7) * std::log1p(std::exp(-0.9)), 1e-6);
  EXPECT_LE(delta_decay(50.0f, 0.0f, -0.5f), 0.0f);
  EXPECT_EQ(delta_decay(200.0f, 0.0f, -0.5f), -100.0f);
  EXPECT_EQ(delta_beta(0.0f), 0.5f);
  EXPECT_NEAR(delta_beta(2.0f), 1.0 / (1.0 + std::exp(-2.0)), 1e-7);
}

}  // namespace
}  // namespace triattn::ops
