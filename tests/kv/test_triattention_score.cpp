// TriAttention scoring: the closed form the policy uses against the paper's position form
// (pre-RoPE keys, explicit cos), and the z-score / GQA max by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <complex>
#include <random>

#include "core/error.h"
#include "core/half.h"
#include "kv/triattention_score.h"
#include "ops/ops.h"

using namespace triattn;

namespace {

struct Rng {
  std::mt19937 gen;
  explicit Rng(unsigned seed) : gen(seed) {}
  float normal() { return std::normal_distribution<float>(0.0f, 1.0f)(gen); }
  float uniform(float a, float b) { return std::uniform_real_distribution<float>(a, b)(gen); }
};

std::vector<float> llama_freqs(int half, double theta) {
  std::vector<float> w(half);
  for (int f = 0; f < half; ++f) w[f] = static_cast<float>(std::pow(theta, -2.0 * f / (2.0 * half)));
  return w;
}

// RoPE in the halves layout, in double: band f rotated by ω_f·pos.
std::vector<float> rotate(const std::vector<float>& k, const std::vector<float>& omega, int64_t pos) {
  const int half = static_cast<int>(omega.size());
  std::vector<float> out(k.size());
  for (int f = 0; f < half; ++f) {
    const double a = static_cast<double>(omega[f]) * static_cast<double>(pos);
    const double c = std::cos(a), s = std::sin(a);
    out[f] = static_cast<float>(k[f] * c - k[f + half] * s);
    out[f + half] = static_cast<float>(k[f + half] * c + k[f] * s);
  }
  return out;
}

// Random statistics with q_abs_mean >= |q_mean| per band, as real statistics always have.
std::shared_ptr<HeadStats> random_stats(Rng& rng, int L, int H, int Hkv, int d) {
  auto s = std::make_shared<HeadStats>();
  s->n_layers = L, s->n_heads = H, s->n_kv_heads = Hkv, s->head_dim = d;
  const size_t n = static_cast<size_t>(L) * H * d / 2;
  for (size_t i = 0; i < n; ++i) {
    const float re = rng.normal(), im = rng.normal();
    s->q_mean_real.push_back(re);
    s->q_mean_imag.push_back(im);
    s->q_abs_mean.push_back(std::hypot(re, im) + rng.uniform(0.0f, 1.0f));
  }
  return s;
}

AttentionGeometry geometry(int L, int H, int Hkv, int d, float fs = 1.0f, double theta = 10000.0) {
  AttentionGeometry g;
  g.n_layers = L, g.n_heads = H, g.n_kv_heads = Hkv, g.head_dim = d;
  g.rope_freqs = llama_freqs(d / 2, theta);
  g.attn_factor = fs;
  return g;
}

// Σ_f of the magnitudes of every term: the natural scale for a relative tolerance (scores
// are sums of cancelling terms and can be near zero).
double score_scale(const HeadStats& s, size_t o, const std::vector<float>& k, double fs) {
  const int half = s.head_dim / 2;
  double m = 0;
  for (int f = 0; f < half; ++f) {
    const double ka = std::hypot(k[f], k[f + half]);
    m += fs * fs * (std::hypot(s.q_mean_real[o + f], s.q_mean_imag[o + f]) + s.q_abs_mean[o + f]) * ka;
  }
  return m;
}

}  // namespace

TEST(TriAttentionScore, OffsetPhaseMeanIsTheMeanOverTheSeventeenOffsets) {
  for (double omega : {1.0, 0.3, 1e-4}) {
    for (int64_t p : {0, 7, 123456}) {
      std::complex<double> sum = 0;
      for (int e = 0; e <= 16; ++e) sum += std::polar(1.0, omega * static_cast<double>(p + (1 << e)));
      double re, im;
      offset_phase_mean(omega, p, 16, &re, &im);
      EXPECT_NEAR(re, sum.real() / 17, 1e-12);
      EXPECT_NEAR(im, sum.imag() / 17, 1e-12);
    }
  }
  // D = {1} when the max offset is 2^0.
  double re, im;
  offset_phase_mean(0.5, 10, 0, &re, &im);
  EXPECT_NEAR(re, std::cos(5.5), 1e-12);
  EXPECT_NEAR(im, std::sin(5.5), 1e-12);
}

TEST(TriAttentionScore, ClosedFormEqualsPositionFormOnRandomData) {
  Rng rng(1);
  for (int d : {8, 16, 64, 128}) {
    for (float fs : {1.0f, 1.37f}) {
      const int L = 2, H = 4, Hkv = 2;
      auto stats = random_stats(rng, L, H, Hkv, d);
      const auto g = geometry(L, H, Hkv, d, fs, d == 128 ? 1e6 : 10000.0);
      for (int64_t p : {int64_t{5}, int64_t{1000}, int64_t{100000}}) {
        TriAttentionScorer scorer(stats, g, 16);
        scorer.prepare(p);
        KvCache cache({L, Hkv, d, DType::F32});
        std::vector<std::vector<float>> pre;  // [token][Hkv*d] pre-RoPE keys
        std::vector<int64_t> kpos;
        for (int t = 0; t < 12; ++t) {
          const int64_t pos = p - 1 - static_cast<int64_t>(rng.uniform(0.0f, static_cast<float>(p - 1)));
          std::vector<float> kp(Hkv * d), kr(Hkv * d), v(Hkv * d, 0.0f);
          for (auto& x : kp) x = rng.normal() * 2.0f;
          for (int h = 0; h < Hkv; ++h) {
            std::vector<float> one(kp.begin() + h * d, kp.begin() + (h + 1) * d);
            const auto rot = rotate(one, g.rope_freqs, pos);
            std::copy(rot.begin(), rot.end(), kr.begin() + h * d);
          }
          for (int l = 0; l < L; ++l) cache.append(l, static_cast<int32_t>(pos), kr.data(), v.data());
          pre.push_back(kp);
          kpos.push_back(pos);
        }
        std::vector<int32_t> rows(12);
        for (int i = 0; i < 12; ++i) rows[i] = i;
        const int G = H / Hkv;
        for (int l = 0; l < L; ++l)
          for (int kh = 0; kh < Hkv; ++kh) {
            std::vector<float> out(G * rows.size());
            scorer.score_stream(cache, l, kh, rows, out.data());
            for (int j = 0; j < G; ++j) {
              const int qh = kh * G + j;
              const size_t o = (static_cast<size_t>(l) * H + qh) * (d / 2);
              for (int i = 0; i < 12; ++i) {
                const std::vector<float> k(pre[i].begin() + kh * d, pre[i].begin() + (kh + 1) * d);
                const double want = score_position_form(&stats->q_mean_real[o], &stats->q_mean_imag[o],
                                                        &stats->q_abs_mean[o], k.data(), g.rope_freqs.data(),
                                                        d / 2, fs, p, kpos[i], 16);
                const double tol = 1e-5 * score_scale(*stats, o, k, fs);
                EXPECT_NEAR(out[j * rows.size() + i], want, tol)
                    << "d=" << d << " fs=" << fs << " p=" << p << " layer " << l << " head " << qh << " key " << i;
              }
            }
          }
      }
    }
  }
}

TEST(TriAttentionScore, F16KeysScoreLikeTheirF32Values) {
  Rng rng(2);
  const int d = 32, half = 16, n = 9;
  auto stats = random_stats(rng, 1, 2, 1, d);
  TriAttentionScorer scorer(stats, geometry(1, 2, 1, d), 16);
  scorer.prepare(777);
  std::vector<uint16_t> k16(n * d);
  std::vector<float> k32(n * d);
  for (int i = 0; i < n * d; ++i) {
    k16[i] = f32_to_f16(rng.normal());
    k32[i] = f16_to_f32(k16[i]);
  }
  std::vector<int32_t> rows = {8, 0, 3, 3, 5};
  std::vector<float> a(2 * rows.size()), b(2 * rows.size());
  const HeadCoeffs* heads = &scorer.coeffs(0, 0);
  score_keys(heads, 2, k16.data(), DType::F16, d * 2, rows, a.data());
  score_keys(heads, 2, k32.data(), DType::F32, d * 4, rows, b.data());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(a[i], b[i]);
  // Scores follow the requested rows (row 3 twice).
  EXPECT_EQ(a[2], a[3]);
  EXPECT_NE(a[0], a[1]);
  (void)half;
}

TEST(TriAttentionScore, NormTermAloneWhenTheMeanQueryIsZero) {
  // q_mean = 0: the score is Σ_f q_abs_mean[f]·|K_f| whatever p is.
  auto s = std::make_shared<HeadStats>();
  s->n_layers = 1, s->n_heads = 1, s->n_kv_heads = 1, s->head_dim = 4;
  s->q_mean_real = {0, 0};
  s->q_mean_imag = {0, 0};
  s->q_abs_mean = {2, 0.5f};
  TriAttentionScorer scorer(s, geometry(1, 1, 1, 4), 16);
  scorer.prepare(42);
  const float keys[8] = {3, 1, 4, 0,   // band0 = (3,4) |5|, band1 = (1,0) |1|
                         0, 0, 0, 2};  // band1 = (0,2) |2|
  std::vector<int32_t> rows = {0, 1};
  float out[2];
  score_keys(&scorer.coeffs(0, 0), 1, keys, DType::F32, 16, rows, out);
  EXPECT_FLOAT_EQ(out[0], 2 * 5 + 0.5f * 1);
  EXPECT_FLOAT_EQ(out[1], 0.5f * 2);
}

TEST(TriAttentionScore, ZScoreThenMaxOverTheGroupByHand) {
  // Head 0 prefers key 0, head 1 key 2; key 1 is good for both. Max over z keeps 0 and 2 on
  // top, where a mean (or a raw sum) would put key 1 first.
  const float scores[8] = {4, 3, 0, 1,   // head 0: mean 2, population std sqrt(2.5)
                           0, 3, 4, 1};  // head 1: same values permuted
  float z[4];
  zscore_group_max(scores, 2, 4, z);
  const double sd = std::sqrt(2.5);
  EXPECT_NEAR(z[0], 2 / sd, 1e-6);
  EXPECT_NEAR(z[1], 1 / sd, 1e-6);
  EXPECT_NEAR(z[2], 2 / sd, 1e-6);
  EXPECT_NEAR(z[3], -1 / sd, 1e-6);
}

TEST(TriAttentionScore, ZScoreOfConstantScoresIsZeroNotNaN) {
  const float scores[3] = {7, 7, 7};
  float z[3];
  zscore_group_max(scores, 1, 3, z);
  for (float v : z) EXPECT_EQ(v, 0.0f);
  // Tiny spread: std clamped at 1e-6, so z = (s - mean) / 1e-6.
  const float tiny[2] = {1.0f, 1.0f + 1.1920929e-7f};
  zscore_group_max(tiny, 1, 2, z);
  EXPECT_NEAR(z[1], 0.5 * 1.1920929e-7 / 1e-6, 1e-3);
}

TEST(TriAttentionScore, ScorerRefusesStatisticsOfAnotherShape) {
  Rng rng(3);
  auto stats = random_stats(rng, 2, 4, 2, 16);
  EXPECT_THROW(TriAttentionScorer(stats, geometry(3, 4, 2, 16), 16), Error);
  EXPECT_THROW(TriAttentionScorer(stats, geometry(2, 4, 2, 8), 16), Error);
  EXPECT_THROW(TriAttentionScorer(nullptr, geometry(2, 4, 2, 16), 16), Error);
  auto g = geometry(2, 4, 2, 16);
  g.rope_freqs.pop_back();
  EXPECT_THROW(TriAttentionScorer(stats, g, 16), Error);
}

TEST(TriAttentionScore, Q8_0KeysScoreLikeTheirDequantizedValues) {
  // Both kernels (the dispatched one dequantizes each row on the stack), head_dim 64 and 128.
  Rng rng(3);
  for (int d : {64, 128}) {
    const int n = 11, G = 2;
    auto stats = random_stats(rng, 1, G, 1, d);
    TriAttentionScorer scorer(stats, geometry(1, G, 1, d), 16);
    scorer.prepare(901);
    const size_t rb = row_bytes(DType::Q8_0, d);
    std::vector<uint8_t> kq(n * rb);
    std::vector<float> k32(n * d), x(d);
    for (int r = 0; r < n; ++r) {
      for (float& f : x) f = 2.0f * rng.normal();
      ops::quantize_row(DType::Q8_0, x.data(), kq.data() + r * rb, d);
      for (int e = 0; e < d; ++e) {  // the GGML block by hand: f16 scale, then 32 int8s
        const uint8_t* block = kq.data() + r * rb + (e / 32) * 34;
        uint16_t h;
        std::memcpy(&h, block, 2);
        k32[r * d + e] = f16_to_f32(h) * static_cast<float>(static_cast<int8_t>(block[2 + e % 32]));
      }
    }
    std::vector<int32_t> rows = {10, 0, 4, 4, 7};
    std::vector<float> a(G * rows.size()), b(a.size()), want(a.size());
    const HeadCoeffs* heads = &scorer.coeffs(0, 0);
    score_keys(heads, G, kq.data(), DType::Q8_0, rb, rows, a.data());
    score_keys_scalar(heads, G, kq.data(), DType::Q8_0, rb, rows, b.data());
    score_keys(heads, G, k32.data(), DType::F32, d * 4, rows, want.data());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_FLOAT_EQ(a[i], want[i]) << "d=" << d << " i=" << i;
      EXPECT_NEAR(b[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "d=" << d << " i=" << i;
    }
    EXPECT_EQ(a[2], a[3]);  // row 4 twice
  }
}

TEST(TriAttentionScore, DispatchedKernelMatchesTheScalarOne) {
  Rng rng(4);
  for (int d : {8, 16, 64, 128, 256}) {
    const int half = d / 2, G = 3, n = 37;
    auto stats = random_stats(rng, 1, G, 1, d);
    TriAttentionScorer scorer(stats, geometry(1, G, 1, d), 16);
    scorer.prepare(4096);
    std::vector<float> k32(n * d);
    std::vector<uint16_t> k16(n * d);
    for (int i = 0; i < n * d; ++i) {
      k32[i] = rng.normal();
      k16[i] = f32_to_f16(k32[i]);
    }
    std::vector<int32_t> rows;
    for (int i = n - 1; i >= 0; i -= 2) rows.push_back(i);
    // Every ISA this CPU runs: the scorer follows the kernels' ISA choice.
    for (ops::Isa isa : ops::supported_isas()) {
      ops::set_isa_for_testing(isa);
      for (DType t : {DType::F32, DType::F16}) {
        const void* keys = t == DType::F32 ? static_cast<const void*>(k32.data()) : k16.data();
        const size_t rb = t == DType::F32 ? d * 4 : d * 2;
        std::vector<float> a(G * rows.size()), b(G * rows.size());
        score_keys(&scorer.coeffs(0, 0), G, keys, t, rb, rows, a.data());
        score_keys_scalar(&scorer.coeffs(0, 0), G, keys, t, rb, rows, b.data());
        for (size_t i = 0; i < a.size(); ++i) {
          const auto& c = scorer.coeffs(0, static_cast<int>(i / rows.size()));
          double scale = 0;  // Σ |terms| bounds the rounding of either summation order
          for (int f = 0; f < half; ++f) scale += std::abs(c.c_re()[f]) + std::abs(c.c_im()[f]) + std::abs(c.w()[f]);
          EXPECT_NEAR(a[i], b[i], 1e-5 * scale * 4)
              << ops::isa_name(isa) << " d=" << d << " type " << dtype_name(t) << " i=" << i;
        }
      }
    }
    ops::set_isa_for_testing(ops::supported_isas().back());
  }
}

// The split policy's two terms: Trig + the paper's norm term = Both, key by key; Spread is
// fs²·sqrt(Σ_f max(0, a_f² − |q̄_f|²)·|K_f|²), written out here from its definition.
TEST(TriAttentionScore, TrigAndSpreadTermsFollowTheirDefinitions) {
  Rng rng(7);
  const int L = 2, H = 4, Hkv = 2, d = 16, half = 8, n = 10;
  auto stats = random_stats(rng, L, H, Hkv, d);
  for (float fs : {1.0f, 1.37f}) {
    const auto g = geometry(L, H, Hkv, d, fs);
    for (DType type : {DType::F32, DType::F16}) {
      KvCache cache({L, Hkv, d, type});
      std::vector<float> k(Hkv * d), v(Hkv * d, 0.0f);
      for (int t = 0; t < n; ++t) {
        for (auto& x : k) x = rng.normal() * 3.0f;
        for (int l = 0; l < L; ++l) cache.append(l, t, k.data(), v.data());
      }
      cache.advance(n);
      TriAttentionScorer both(stats, g, 16), trig(stats, g, 16, ScoreTerms::Trig),
          spread(stats, g, 16, ScoreTerms::Spread);
      for (auto* s : {&both, &trig, &spread}) s->prepare(12345);
      std::vector<int32_t> rows = {9, 0, 4, 4, 7};
      const int G = H / Hkv;
      for (int l = 0; l < L; ++l)
        for (int kh = 0; kh < Hkv; ++kh) {
          std::vector<float> b(G * rows.size()), t(b.size()), sp(b.size());
          both.score_stream(cache, l, kh, rows, b.data());
          trig.score_stream(cache, l, kh, rows, t.data());
          spread.score_stream(cache, l, kh, rows, sp.data());
          const auto keys = cache.keys(l, kh);
          for (int j = 0; j < G; ++j) {
            const size_t o = (static_cast<size_t>(l) * H + kh * G + j) * half;
            for (size_t i = 0; i < rows.size(); ++i) {
              std::vector<double> kk(d);
              for (int c = 0; c < d; ++c)
                kk[c] = type == DType::F32
                            ? static_cast<const float*>(keys)[rows[i] * d + c]
                            : f16_to_f32(static_cast<const uint16_t*>(keys)[rows[i] * d + c]);
              double norm = 0, var = 0, scale = 0;
              for (int f = 0; f < half; ++f) {
                const double m = std::hypot(stats->q_mean_real[o + f], stats->q_mean_imag[o + f]);
                const double a = stats->q_abs_mean[o + f], e = kk[f] * kk[f] + kk[f + half] * kk[f + half];
                norm += fs * fs * (a - m) * std::sqrt(e);
                var += std::max(0.0, a * a - m * m) * e;
                scale += fs * fs * (a + m) * std::sqrt(e);
              }
              const size_t at = j * rows.size() + i;
              EXPECT_NEAR(t[at] + norm, b[at], 1e-5 * scale) << "layer " << l << " head " << j << " row " << rows[i];
              EXPECT_NEAR(sp[at], fs * fs * std::sqrt(var), 1e-5 * scale) << "layer " << l << " row " << rows[i];
            }
          }
        }
    }
  }
}
