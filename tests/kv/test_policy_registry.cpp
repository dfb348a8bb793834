// The policy registry: names, errors, pruning modes, and the full-attention policy.
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "core/error.h"
#include "kv/policy.h"

using namespace triattn;

namespace {
using triattn::test::error_of;
AttentionGeometry registry_geometry() {
  AttentionGeometry g;
  g.n_layers = 1, g.n_heads = 2, g.n_kv_heads = 1, g.head_dim = 4;
  g.rope_freqs = {1.0f, 0.01f};
  return g;
}
}  // namespace

TEST(PolicyRegistry, ListsFullAndTriAttention) {
  const auto& list = kv_policy_list();
  ASSERT_GE(list.size(), 2u);
  bool full = false, tri = false;
  for (const auto& p : list) {
    EXPECT_FALSE(p.description.empty());
    if (p.name == "full") full = !p.needs_stats;
    if (p.name == "triattention") tri = p.needs_stats;
  }
  EXPECT_TRUE(full);
  EXPECT_TRUE(tri);
}

TEST(PolicyRegistry, UnknownPolicyNamesTheKnownOnes) {
  const std::string msg = error_of([] { make_kv_policy("h3o", PolicyParams{}, registry_geometry()); });
  EXPECT_NE(msg.find("'h3o'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("triattention"), std::string::npos) << msg;
  EXPECT_NE(msg.find("full"), std::string::npos) << msg;
}

TEST(PolicyRegistry, TriAttentionWithoutStatsSaysHowToCalibrate) {
  const std::string msg = error_of([] { make_kv_policy("triattention", PolicyParams{}, registry_geometry()); });
  EXPECT_NE(msg.find("triattn calibrate -m MODEL --input FILE -o STATS"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--stats"), std::string::npos) << msg;
}

TEST(PolicyRegistry, TriAttentionRefusesStatsOfAnotherModel) {
  auto s = std::make_shared<HeadStats>();
  s->n_layers = 2, s->n_heads = 2, s->n_kv_heads = 1, s->head_dim = 4;
  s->q_mean_real.assign(4, 0.0f);
  s->q_mean_imag.assign(4, 0.0f);
  s->q_abs_mean.assign(4, 1.0f);
  PolicyParams p;
  p.stats = s;
  const std::string msg = error_of([&] { make_kv_policy("triattention", p, registry_geometry()); });
  EXPECT_NE(msg.find("2 layers"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 layers"), std::string::npos) << msg;
}

TEST(PolicyRegistry, FullNeverEvicts) {
  auto policy = make_kv_policy("full", PolicyParams{}, registry_geometry());
  EXPECT_EQ(policy->name(), "full");
  EXPECT_EQ(policy->needs(), kNeedNothing);
  KvCache cache({1, 1, 4, DType::F32});
  const float k[4] = {1, 2, 3, 4}, v[4] = {};
  for (int t = 0; t < 5000; ++t) cache.append(0, t, k, v);
  EXPECT_FALSE(policy->plan_before_append(cache, 100000, {}, nullptr));
}

TEST(PolicyRegistry, PruningModeNamesRoundTrip) {
  for (auto m : {PruningMode::PerHead, PruningMode::PerLayerPerHead, PruningMode::PerLayer, PruningMode::Global})
    EXPECT_EQ(pruning_mode_from_name(pruning_mode_name(m)), m);
  EXPECT_EQ(pruning_mode_from_name("per_head"), PruningMode::PerHead);
  EXPECT_EQ(pruning_mode_from_name("global"), PruningMode::Global);
  EXPECT_FALSE(pruning_mode_from_name("per-head"));
  EXPECT_EQ(pruning_mode_names(), "per_head, per_layer_per_head, per_layer, global");
}
