// The TriAttention policy on hand-made caches: trigger, protection, GQA max, and which
// streams share a keep set in each pruning mode. Statistics with q_mean = 0 make a key's
// score exactly Σ_f q_abs_mean[f]·|K_f|, so every expected keep set is worked out by hand.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kv/policy.h"

using namespace triattn;

namespace {

// Norm-only statistics: every query head weights band 0 by 1 (head_dim 2, one band).
std::shared_ptr<HeadStats> norm_stats(int L, int H, int Hkv, int d) {
  auto s = std::make_shared<HeadStats>();
  s->n_layers = L, s->n_heads = H, s->n_kv_heads = Hkv, s->head_dim = d;
  const size_t n = static_cast<size_t>(L) * H * d / 2;
  s->q_mean_real.assign(n, 0.0f);
  s->q_mean_imag.assign(n, 0.0f);
  s->q_abs_mean.assign(n, 0.0f);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) s->q_abs_mean[(static_cast<size_t>(l) * H + h) * (d / 2)] = 1.0f;
  return s;
}

AttentionGeometry policy_geometry(int L, int H, int Hkv, int d) {
  AttentionGeometry g;
  g.n_layers = L, g.n_heads = H, g.n_kv_heads = Hkv, g.head_dim = d;
  for (int f = 0; f < d / 2; ++f) g.rope_freqs.push_back(1.0f / static_cast<float>(1 + f));
  return g;
}

// norms[layer][head][token]: key = (norm, 0) in band 0 of head_dim 2.
KvCache make_cache(const std::vector<std::vector<std::vector<float>>>& norms) {
  const int L = static_cast<int>(norms.size()), H = static_cast<int>(norms[0].size());
  const int T = static_cast<int>(norms[0][0].size());
  KvCache cache({L, H, 2, DType::F32});
  for (int t = 0; t < T; ++t)
    for (int l = 0; l < L; ++l) {
      std::vector<float> k(2 * H, 0.0f), v(2 * H, 0.0f);
      for (int h = 0; h < H; ++h) k[2 * h] = norms[l][h][t];
      cache.append(l, t, k.data(), v.data());
    }
  cache.advance(T);
  return cache;
}

PolicyParams params(PruningMode mode, int64_t B, int64_t beta, int64_t window,
                    std::shared_ptr<const HeadStats> stats) {
  PolicyParams p;
  p.budget = B;
  p.divide_length = beta;
  p.window = window;
  p.mode = mode;
  p.stats = std::move(stats);
  return p;
}

using Keep = std::vector<int32_t>;

// The example of the mode tests: 2 layers x 2 KV heads (G = 1), 6 tokens, the last one in the
// window, budget 3 -> two of the five candidates survive. Token 5's norm is irrelevant.
const std::vector<std::vector<std::vector<float>>> kNorms = {
    {{5, 4, 3, 2, 1, 0}, {1, 1, 1, 9, 1, 0}},  // layer 0: head 0, head 1
    {{1, 2, 3, 4, 5, 0}, {1, 9, 1, 1, 1, 0}},  // layer 1
};

KeepPlan plan_for(PruningMode mode, ThreadPool* pool = nullptr) {
  KvCache cache = make_cache(kNorms);
  auto policy = make_kv_policy("triattention", params(mode, 3, 1, 1, norm_stats(2, 2, 2, 2)), policy_geometry(2, 2, 2, 2));
  auto plan = policy->plan_before_append(cache, 1, {}, pool);
  EXPECT_TRUE(plan.has_value());
  return plan.value_or(KeepPlan{});
}

}  // namespace

TEST(TriAttentionPolicy, ScoringOnAPoolPlansTheSame) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    for (PruningMode mode : {PruningMode::PerLayerPerHead, PruningMode::PerHead, PruningMode::PerLayer,
                             PruningMode::Global})
      EXPECT_EQ(plan_for(mode, &pool).keep, plan_for(mode).keep) << threads << " threads";
  }
}

TEST(TriAttentionPolicy, PerLayerPerHeadSelectsEachStreamOnItsOwn) {
  const KeepPlan plan = plan_for(PruningMode::PerLayerPerHead);
  ASSERT_EQ(plan.keep.size(), 4u);
  EXPECT_EQ(plan.keep[0], (Keep{0, 1, 5}));  // layer 0 head 0: norms 5, 4 best
  EXPECT_EQ(plan.keep[1], (Keep{0, 3, 5}));  // layer 0 head 1: 9, then the oldest of the 1s
  EXPECT_EQ(plan.keep[2], (Keep{3, 4, 5}));  // layer 1 head 0
  EXPECT_EQ(plan.keep[3], (Keep{0, 1, 5}));  // layer 1 head 1
}

TEST(TriAttentionPolicy, PerHeadSharesOneSetPerKvHeadAcrossLayers) {
  // Head 0: z-scores of (5,4,3,2,1) and (1,2,3,4,5) cancel in the mean over layers -> all tie
  // -> the two oldest. Head 1: z = (-.5,-.5,-.5,2,-.5) and (-.5,2,-.5,-.5,-.5) -> tokens 1, 3.
  const KeepPlan plan = plan_for(PruningMode::PerHead);
  EXPECT_EQ(plan.keep[0], (Keep{0, 1, 5}));
  EXPECT_EQ(plan.keep[2], (Keep{0, 1, 5}));
  EXPECT_EQ(plan.keep[1], (Keep{1, 3, 5}));
  EXPECT_EQ(plan.keep[3], (Keep{1, 3, 5}));
}

TEST(TriAttentionPolicy, PerLayerSharesOneSetPerLayerByMaxOverHeads) {
  // Layer 0: max(z(5,4,3,2,1), z(1,1,1,9,1)) = (1.41, .71, 0, 2, -.5) -> tokens 3, 0.
  // Layer 1: max(z(1,2,3,4,5), z(1,9,1,1,1)) = (-.5, 2, 0, .71, 1.41) -> tokens 1, 4.
  const KeepPlan plan = plan_for(PruningMode::PerLayer);
  EXPECT_EQ(plan.keep[0], (Keep{0, 3, 5}));
  EXPECT_EQ(plan.keep[1], (Keep{0, 3, 5}));
  EXPECT_EQ(plan.keep[2], (Keep{1, 4, 5}));
  EXPECT_EQ(plan.keep[3], (Keep{1, 4, 5}));
}

TEST(TriAttentionPolicy, GlobalSharesOneSetForTheWholeModel) {
  // Mean over layers of the per-layer maxima: (.46, 1.35, 0, 1.35, .46) -> tokens 1, 3.
  const KeepPlan plan = plan_for(PruningMode::Global);
  for (const auto& k : plan.keep) EXPECT_EQ(k, (Keep{1, 3, 5}));
}

TEST(TriAttentionPolicy, GqaGroupTakesTheMaxOfZScores) {
  // One KV head shared by two query heads (head_dim 4): head 0 weights band 0, head 1 band 1.
  // Band-0 norms (4,3,0,1) and band-1 norms (0,3,4,1): max of z keeps tokens 0 and 2, where a
  // mean of z or a raw sum would keep token 1.
  auto s = std::make_shared<HeadStats>();
  s->n_layers = 1, s->n_heads = 2, s->n_kv_heads = 1, s->head_dim = 4;
  s->q_mean_real.assign(4, 0.0f);
  s->q_mean_imag.assign(4, 0.0f);
  s->q_abs_mean = {1, 0, 0, 1};  // head 0: bands (1, 0); head 1: bands (0, 1)
  KvCache cache({1, 1, 4, DType::F32});
  const float b0[5] = {4, 3, 0, 1, 0}, b1[5] = {0, 3, 4, 1, 0};
  for (int t = 0; t < 5; ++t) {
    const float k[4] = {b0[t], b1[t], 0, 0}, v[4] = {};
    cache.append(0, t, k, v);
  }
  cache.advance(5);
  auto policy = make_kv_policy("triattention", params(PruningMode::PerLayerPerHead, 3, 1, 1, s), policy_geometry(1, 2, 1, 4));
  auto plan = policy->plan_before_append(cache, 1, {}, nullptr);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->keep[0], (Keep{0, 2, 4}));
}

TEST(TriAttentionPolicy, TriggersOnlyPastBudgetPlusDivideLengthAndPrunesToTheBudget) {
  const std::vector<std::vector<std::vector<float>>> norms = {{{9, 1, 8, 2, 7, 3, 6, 4, 5, 0}}};
  auto stats = norm_stats(1, 1, 1, 2);
  auto policy = make_kv_policy("triattention", params(PruningMode::PerHead, 5, 4, 2, stats), policy_geometry(1, 1, 1, 2));
  EXPECT_EQ(policy->max_append(), 4);
  EXPECT_EQ(policy->memory_bound(SequenceInfo{}), 9);
  {
    std::vector<std::vector<std::vector<float>>> n8 = {{{9, 1, 8, 2, 7, 3, 6, 4}}};
    KvCache cache = make_cache(n8);
    EXPECT_FALSE(policy->plan_before_append(cache, 1, {}, nullptr));  // 8 + 1 <= 9
    auto plan = policy->plan_before_append(cache, 2, {}, nullptr);    // 8 + 2 > 9
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->keep[0], (Keep{0, 2, 4, 6, 7}));  // window 6, 7 + best three of 9,1,8,2,7,3
    cache.apply(*plan);
    EXPECT_EQ(cache.size(0, 0), 5);
    EXPECT_EQ(cache.positions(0, 0)[3], 6);
  }
  KvCache cache = make_cache(norms);
  auto plan = policy->plan_before_append(cache, 1, {}, nullptr);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->keep[0], (Keep{0, 2, 4, 8, 9}));
}

TEST(TriAttentionPolicy, SinksAndPromptAreProtected) {
  const std::vector<std::vector<std::vector<float>>> norms = {{{0, 0, 1, 5, 2, 4, 3, 0, 0, 0}}};
  auto stats = norm_stats(1, 1, 1, 2);
  KvCache cache = make_cache(norms);
  PolicyParams p = params(PruningMode::PerHead, 5, 2, 2, stats);
  p.sink = 2;
  auto policy = make_kv_policy("triattention", p, policy_geometry(1, 1, 1, 2));
  auto plan = policy->plan_before_append(cache, 1, {}, nullptr);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->keep[0], (Keep{0, 1, 3, 8, 9}));  // sinks 0,1 + window 8,9 + best (norm 5)

  p.sink = 0;
  p.protect_prompt = true;
  auto policy2 = make_kv_policy("triattention", p, policy_geometry(1, 1, 1, 2));
  plan = policy2->plan_before_append(cache, 1, SequenceInfo{3}, nullptr);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->keep[0], (Keep{0, 1, 2, 8, 9}));  // the prompt fills the budget with the window
}

TEST(TriAttentionPolicy, SharedModesRefuseStreamsThatHoldDifferentTokens) {
  KvCache cache = make_cache(kNorms);
  KeepPlan uneven;
  uneven.keep = {{0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}};
  cache.apply(uneven);
  auto policy = make_kv_policy("triattention", params(PruningMode::PerHead, 2, 1, 1, norm_stats(2, 2, 2, 2)),
                               policy_geometry(2, 2, 2, 2));
  EXPECT_THROW(policy->plan_before_append(cache, 1, {}, nullptr), Error);
}

TEST(TriAttentionPolicy, SteadyStateNeverExceedsBudgetPlusDivideLength) {
  // Decode-like loop: one token at a time, prune when asked. Also checks the kept positions
  // stay increasing and the most recent tokens survive.
  const int B = 8, beta = 4, W = 3;
  auto policy = make_kv_policy("triattention", params(PruningMode::PerHead, B, beta, W, norm_stats(2, 2, 1, 2)),
                               policy_geometry(2, 2, 1, 2));
  KvCache cache({2, 1, 2, DType::F16});
  int events = 0;
  for (int t = 0; t < 100; ++t) {
    if (auto plan = policy->plan_before_append(cache, 1, {}, nullptr)) {
      cache.apply(*plan);
      ++events;
      EXPECT_EQ(cache.size(0, 0), B);
    }
    const float k[2] = {static_cast<float>((t * 37) % 11), 0}, v[2] = {};
    for (int l = 0; l < 2; ++l) cache.append(l, t, k, v);
    cache.advance(1);
    ASSERT_LE(cache.max_size(), B + beta);
    const int32_t* pos = cache.positions(1, 0);
    for (int i = 1; i < cache.size(1, 0); ++i) ASSERT_LT(pos[i - 1], pos[i]);
    ASSERT_EQ(pos[cache.size(1, 0) - 1], t);
  }
  EXPECT_EQ(cache.peak_tokens(), B + beta);
  EXPECT_EQ(events, 22);  // at t = 12, 16, ..., 96
}
