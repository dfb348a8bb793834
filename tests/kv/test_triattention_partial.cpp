// TriAttention scoring under partial RoPE (docs/design.md, "Partial RoPE"): the scorer against
// the numpy reference's fixture, the exact reduction to the full-RoPE score when every
// coordinate rotates, and a case where treating every coordinate as rotated ranks keys wrongly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "kv/triattention_score.h"
#include "ops/ops.h"

using namespace triattn;
using json = nlohmann::json;

namespace {

std::vector<float> fixture_floats(const json& j) { return j.get<std::vector<float>>(); }

struct PartialCase {
  std::string name;
  std::shared_ptr<HeadStats> stats;
  AttentionGeometry g;
  int64_t p = 0;
  int max_log2 = 16, n_keys = 0;
  std::vector<int32_t> positions;
  std::vector<float> keys, both, trig, spread, scale;
};

std::vector<PartialCase> load_partial_fixture() {
  std::ifstream in(std::string(TRIATTN_SOURCE_DIR) + "/tests/data/triattention_partial_reference.json");
  EXPECT_TRUE(in.good()) << "tests/data/triattention_partial_reference.json";
  const json doc = json::parse(in);
  std::vector<PartialCase> out;
  for (const json& j : doc.at("cases")) {
    PartialCase c;
    c.name = j.at("name");
    auto s = std::make_shared<HeadStats>();
    s->n_layers = j.at("n_layers"), s->n_heads = j.at("n_heads"), s->n_kv_heads = j.at("n_kv_heads");
    s->head_dim = j.at("head_dim"), s->rotary_dim = j.at("rotary_dim");
    s->q_mean_real = fixture_floats(j.at("q_mean_real"));
    s->q_mean_imag = fixture_floats(j.at("q_mean_imag"));
    s->q_abs_mean = fixture_floats(j.at("q_abs_mean"));
    s->q_pass_mean = fixture_floats(j.at("q_pass_mean"));
    s->q_pass_abs_mean = fixture_floats(j.at("q_pass_abs_mean"));
    if (s->pass_dims() == 0) s->q_pass_abs_mean.clear();  // a full-RoPE head has no pass statistics
    c.g.n_layers = s->n_layers, c.g.n_heads = s->n_heads, c.g.n_kv_heads = s->n_kv_heads;
    c.g.head_dim = s->head_dim, c.g.rotary_dim = s->rotary_dim;
    c.g.rope_freqs = fixture_floats(j.at("rope_freqs"));
    c.g.attn_factor = j.at("attn_factor").get<float>();
    c.stats = s;
    c.p = j.at("p");
    c.max_log2 = j.at("max_offset_log2");
    c.positions = j.at("positions").get<std::vector<int32_t>>();
    c.n_keys = static_cast<int>(c.positions.size());
    c.keys = fixture_floats(j.at("keys"));
    c.both = fixture_floats(j.at("both")), c.trig = fixture_floats(j.at("trig")), c.spread = fixture_floats(j.at("spread"));
    c.scale = fixture_floats(j.at("scale"));
    out.push_back(std::move(c));
  }
  return out;
}

// The fixture's keys in a cache of `type`: [layer][kv_head][key][head_dim].
KvCache fill_partial_cache(const PartialCase& c, DType type) {
  const int L = c.g.n_layers, Hkv = c.g.n_kv_heads, d = c.g.head_dim, n = c.n_keys;
  KvCache cache({L, Hkv, d, type});
  std::vector<float> k(static_cast<size_t>(Hkv) * d), v(k.size(), 0.0f);
  for (int i = 0; i < n; ++i)
    for (int l = 0; l < L; ++l) {
      for (int h = 0; h < Hkv; ++h)
        std::copy_n(&c.keys[((static_cast<size_t>(l) * Hkv + h) * n + i) * d], d, &k[static_cast<size_t>(h) * d]);
      cache.append(l, c.positions[i], k.data(), v.data());
    }
  return cache;
}

// Every (layer, query head) score of `terms`: [layer][head][key], as in the fixture.
std::vector<float> all_partial_scores(const PartialCase& c, const KvCache& cache, ScoreTerms terms) {
  TriAttentionScorer scorer(c.stats, c.g, c.max_log2, terms);
  scorer.prepare(c.p);
  const int L = c.g.n_layers, H = c.g.n_heads, Hkv = c.g.n_kv_heads, G = H / Hkv, n = c.n_keys;
  std::vector<int32_t> rows(n);
  for (int i = 0; i < n; ++i) rows[i] = i;
  std::vector<float> out(static_cast<size_t>(L) * H * n), s(static_cast<size_t>(G) * n);
  for (int l = 0; l < L; ++l)
    for (int kh = 0; kh < Hkv; ++kh) {
      scorer.score_stream(cache, l, kh, rows, s.data());
      for (int j = 0; j < G; ++j)
        std::copy_n(&s[static_cast<size_t>(j) * n], n, &out[(static_cast<size_t>(l) * H + kh * G + j) * n]);
    }
  return out;
}

// One head's statistics of T pre-RoPE queries [T][d] with the first `rot` coordinates rotating,
// as calibration computes them (docs/design.md, "Calibration").
HeadStats partial_query_stats(const std::vector<float>& q, int T, int d, int rot) {
  HeadStats s;
  s.n_layers = s.n_heads = s.n_kv_heads = 1;
  s.head_dim = d, s.rotary_dim = rot;
  const int h = rot / 2, dp = d - rot;
  std::vector<double> re(h), im(h), ab(h), pm(dp);
  double pa = 0;
  for (int t = 0; t < T; ++t) {
    const float* x = &q[static_cast<size_t>(t) * d];
    for (int f = 0; f < h; ++f) re[f] += x[f], im[f] += x[f + h], ab[f] += std::hypot(x[f], x[f + h]);
    double sq = 0;
    for (int i = 0; i < dp; ++i) pm[i] += x[rot + i], sq += static_cast<double>(x[rot + i]) * x[rot + i];
    pa += std::sqrt(sq);
  }
  for (int f = 0; f < h; ++f) {
    s.q_mean_real.push_back(static_cast<float>(re[f] / T));
    s.q_mean_imag.push_back(static_cast<float>(im[f] / T));
    s.q_abs_mean.push_back(static_cast<float>(ab[f] / T));
  }
  for (int i = 0; i < dp; ++i) s.q_pass_mean.push_back(static_cast<float>(pm[i] / T));
  if (dp > 0) s.q_pass_abs_mean.push_back(static_cast<float>(pa / T));
  return s;
}

}  // namespace

TEST(TriAttentionPartial, ScoresEqualTheNumpyReference) {
  const auto cases = load_partial_fixture();
  ASSERT_EQ(cases.size(), 4u);
  for (const PartialCase& c : cases) {
    const KvCache cache = fill_partial_cache(c, DType::F32);
    const auto both = all_partial_scores(c, cache, ScoreTerms::Both), trig = all_partial_scores(c, cache, ScoreTerms::Trig),
               spread = all_partial_scores(c, cache, ScoreTerms::Spread);
    ASSERT_EQ(both.size(), c.both.size()) << c.name;
    for (size_t i = 0; i < both.size(); ++i) {
      const double tol = 2e-6 * c.scale[i];
      EXPECT_NEAR(both[i], c.both[i], tol) << c.name << " score " << i;
      EXPECT_NEAR(trig[i], c.trig[i], tol) << c.name << " trig " << i;
      EXPECT_NEAR(spread[i], c.spread[i], 2e-6 * c.spread[i] + 1e-6) << c.name << " spread " << i;
    }
  }
}

TEST(TriAttentionPartial, Q8KeysScoreLikeTheirDequantizedValues) {
  // Head 32, 8 rotated: the rotated part is not a whole Q8_0 block, so the scorer must read
  // whole rows and split them itself.
  const auto cases = load_partial_fixture();
  const PartialCase& c = cases[0];
  ASSERT_EQ(c.g.head_dim, 32);
  ASSERT_EQ(c.g.rotary_dim, 8);
  const KvCache q8 = fill_partial_cache(c, DType::Q8_0);
  PartialCase deq = c;
  for (int l = 0; l < c.g.n_layers; ++l)
    for (int h = 0; h < c.g.n_kv_heads; ++h)
      for (int i = 0; i < c.n_keys; ++i) {
        const auto* row = static_cast<const uint8_t*>(q8.keys(l, h)) + static_cast<size_t>(i) * q8.row_bytes();
        ops::dequantize_row(DType::Q8_0, row, &deq.keys[((static_cast<size_t>(l) * c.g.n_kv_heads + h) * c.n_keys + i) * 32], 32);
      }
  const KvCache f32 = fill_partial_cache(deq, DType::F32);
  for (ScoreTerms t : {ScoreTerms::Both, ScoreTerms::Trig, ScoreTerms::Spread})
    EXPECT_EQ(all_partial_scores(c, q8, t), all_partial_scores(deq, f32, t));
}

TEST(TriAttentionPartial, AllRotatedIsBitIdenticalToTheFullRopeScore) {
  // rotary_dim = head_dim (stated, or left 0) takes the full-RoPE path: the same floats as the
  // kernel on the same coefficients, which is what the scorer computed before partial RoPE.
  auto cases = load_partial_fixture();
  const PartialCase& full = cases[3];
  ASSERT_EQ(full.g.rotary_dim, full.g.head_dim);
  const KvCache cache = fill_partial_cache(full, DType::F32);
  PartialCase unset = full;
  auto s0 = std::make_shared<HeadStats>(*full.stats);
  s0->rotary_dim = 0;
  unset.stats = s0;
  unset.g.rotary_dim = 0;
  for (ScoreTerms t : {ScoreTerms::Both, ScoreTerms::Trig, ScoreTerms::Spread})
    EXPECT_EQ(all_partial_scores(full, cache, t), all_partial_scores(unset, cache, t));
  TriAttentionScorer scorer(full.stats, full.g, 16);
  scorer.prepare(full.p);
  EXPECT_EQ(scorer.pass_dims(), 0);
  std::vector<int32_t> rows(full.n_keys);
  for (int i = 0; i < full.n_keys; ++i) rows[i] = i;
  std::vector<float> a(rows.size()), b(rows.size());
  scorer.score_stream(cache, 0, 1, rows, a.data());  // KV head 1 serves query head 1 (group 1)
  score_keys(&scorer.coeffs(0, 1), 1, cache.keys(0, 1), DType::F32, cache.row_bytes(), rows, b.data());
  EXPECT_EQ(a, b);
}

TEST(TriAttentionPartial, TreatingEveryCoordinateAsRotatedRanksKeysWrongly) {
  // Queries whose unrotated coordinates carry the signal (a large, steady mean there) and keys
  // whose unrotated parts differ: the keys that attention favours are those with the largest
  // E[q_pass]·k_pass. The partial-RoPE score finds them; the all-rotated computation (bands
  // pairing i with i + d/2 over the whole head, statistics calibrated that way) does not.
  const int d = 32, r = 8, n = 64, budget = 16, T = 400;
  const int64_t p = 4096;
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> mu(d);
  for (int i = 0; i < d; ++i) mu[i] = i < r ? 0.2f * nd(gen) : 1.5f * nd(gen);
  std::vector<float> queries(static_cast<size_t>(T) * d);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < d; ++i) queries[static_cast<size_t>(t) * d + i] = mu[i] + 0.5f * nd(gen);
  std::vector<float> omega_r(r / 2), omega_d(d / 2);
  for (int f = 0; f < r / 2; ++f) omega_r[f] = static_cast<float>(std::pow(10000.0, -2.0 * f / r));
  for (int f = 0; f < d / 2; ++f) omega_d[f] = static_cast<float>(std::pow(10000.0, -2.0 * f / d));
  // Keys as the model stores them: the first r coordinates rotated at their position.
  std::vector<float> pre(static_cast<size_t>(n) * d);
  KvCache cache({1, 1, d, DType::F32});
  std::vector<float> v(d, 0.0f);
  for (int i = 0; i < n; ++i) {
    float* k = &pre[static_cast<size_t>(i) * d];
    for (int t = 0; t < d; ++t) k[t] = nd(gen);
    std::vector<float> post(k, k + d);
    const int pos = 50 * i;
    for (int f = 0; f < r / 2; ++f) {
      const double a = omega_r[f] * static_cast<double>(pos), c = std::cos(a), s = std::sin(a);
      post[f] = static_cast<float>(k[f] * c - k[f + r / 2] * s);
      post[f + r / 2] = static_cast<float>(k[f + r / 2] * c + k[f] * s);
    }
    cache.append(0, pos, post.data(), v.data());
  }
  // The truth: each key's mean logit over the calibration queries (pass part position-free,
  // the rotated part's mean over the queries is small by construction).
  std::vector<double> truth(n);
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < T; ++t)
      for (int j = r; j < d; ++j) truth[i] += queries[static_cast<size_t>(t) * d + j] * pre[static_cast<size_t>(i) * d + j];
  auto top = [&](auto score) {
    std::vector<int> idx(n);
    for (int i = 0; i < n; ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return score(a) > score(b); });
    return std::set<int>(idx.begin(), idx.begin() + budget);
  };
  const std::set<int> want = top([&](int i) { return truth[i]; });
  auto keep_set = [&](int rot, const std::vector<float>& omega) {
    auto s = std::make_shared<HeadStats>(partial_query_stats(queries, T, d, rot));
    AttentionGeometry g;
    g.n_layers = 1, g.n_heads = 1, g.n_kv_heads = 1, g.head_dim = d, g.rotary_dim = rot, g.rope_freqs = omega;
    TriAttentionScorer scorer(s, g, 16);
    scorer.prepare(p);
    std::vector<int32_t> rows(n);
    for (int i = 0; i < n; ++i) rows[i] = i;
    std::vector<float> sc(n);
    scorer.score_stream(cache, 0, 0, rows, sc.data());
    return top([&](int i) { return sc[i]; });
  };
  auto overlap = [&](const std::set<int>& a) {
    int k = 0;
    for (int i : a) k += static_cast<int>(want.count(i));
    return k;
  };
  const int partial = overlap(keep_set(r, omega_r)), all_rotated = overlap(keep_set(d, omega_d));
  std::printf("keep-set overlap with the favoured keys: partial %d, all-rotated %d of %d\n", partial, all_rotated, budget);
  EXPECT_GE(partial, budget * 3 / 4) << "partial-RoPE keep set vs the keys attention favours";
  EXPECT_LE(all_rotated, budget / 2) << "all-rotated keep set should miss most of them";
}

TEST(TriAttentionPartial, RefusesStatisticsOfAnotherRotaryLayout) {
  const auto cases = load_partial_fixture();
  const PartialCase& c = cases[0];  // head 32, 8 rotated
  auto msg = [](auto f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  AttentionGeometry full = c.g;
  full.rotary_dim = 0;
  full.rope_freqs.assign(16, 1.0f);
  EXPECT_NE(msg([&] { TriAttentionScorer(c.stats, full, 16); }).find("rotary_dim 8 but the model rotates 32"),
            std::string::npos);
  auto no_pass = std::make_shared<HeadStats>(*c.stats);
  no_pass->q_pass_mean.clear();
  EXPECT_NE(msg([&] { TriAttentionScorer(no_pass, c.g, 16); }).find("leaves 24 coordinates unrotated"),
            std::string::npos);
}
