// Each policy describes itself in its own file (kv/policies/<name>.cpp) and the registry lists
// the descriptions: an instance's name and needs are its description's, its copy for a forked
// sequence is the same policy, and every knob has one flag, one request field, a default
// taken from PolicyParams{} and a check that names its flag.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <variant>

#include "common/error_of.h"
#include "kv/policy.h"
#include "kv/policy_knob.h"

using namespace triattn;

namespace {

AttentionGeometry described_geometry() {
  AttentionGeometry g;
  g.n_layers = 1, g.n_heads = 2, g.n_kv_heads = 1, g.head_dim = 4;
  g.rope_freqs = {1.0f, 0.01f};
  return g;
}

std::shared_ptr<const HeadStats> described_stats() {
  auto s = std::make_shared<HeadStats>();
  s->n_layers = 1, s->n_heads = 2, s->n_kv_heads = 1, s->head_dim = 4;
  s->q_mean_real.assign(4, 0.5f);
  s->q_mean_imag.assign(4, 0.0f);
  s->q_abs_mean.assign(4, 1.0f);
  return s;
}

}  // namespace

TEST(PolicyDescriptions, InstancesAndTheirCopiesAnswerAsDescribed) {
  for (const PolicyDescription& d : kv_policy_list()) {
    PolicyParams p;
    if (d.needs_stats) p.stats = described_stats();
    const auto policy = make_kv_policy(d.name, p, described_geometry());
    EXPECT_EQ(policy->name(), d.name);
    EXPECT_EQ(policy->needs(), d.needs) << d.name;
    const auto copy = policy->clone();
    ASSERT_NE(copy, nullptr) << d.name;
    EXPECT_EQ(copy->name(), d.name);
    EXPECT_EQ(copy->needs(), d.needs) << d.name;
    EXPECT_EQ(copy->max_append(), policy->max_append()) << d.name;
  }
}

TEST(PolicyDescriptions, EachKnobHasOneFlagAndOneRequestField) {
  std::vector<std::string> shared;
  for (const PolicyKnob& k : kv_shared_params()) shared.push_back(knob_field(k));
  EXPECT_EQ(shared, (std::vector<std::string>{"kv_budget", "divide_length", "window", "sink", "protect_prompt",
                                              "pruning_mode"}));
  std::set<std::string> fields(shared.begin(), shared.end());
  for (const PolicyKnob& k : kv_policy_knobs()) {
    EXPECT_TRUE(fields.insert(knob_field(k)).second) << k.flag << " described twice";
    EXPECT_FALSE(k.description.empty()) << k.flag;
    EXPECT_EQ(k.default_value, knob_default_text(k.member)) << k.flag;
  }
  EXPECT_TRUE(fields.count("obs_window") && fields.count("rkv_lambda") && fields.count("kv_seed"));
  for (const PolicyKnob& k : kv_policy_knobs())
    if (k.flag == "--pool-kernel") {
      EXPECT_EQ(kv_knob_readers(k), "triattention-split, snapkv, rkv");
    }
  // Per-policy defaults of the shared knobs are named after the common one.
  for (const PolicyKnob& k : kv_shared_params()) {
    if (k.flag == "--sink") {
      EXPECT_EQ(k.default_value, "0; streaming: 4");
    }
    if (k.flag == "--pruning-mode") {
      EXPECT_EQ(k.default_value, "per_layer_per_head; triattention: per_head");
    }
  }
}

// A value just outside a knob's range is refused by every policy that reads it, naming the flag.
TEST(PolicyDescriptions, EachKnobsRangeIsCheckedByItsReaders) {
  for (const PolicyDescription& d : kv_policy_list()) {
    for (const PolicyKnob& k : d.params) {
      PolicyParams p;
      if (d.needs_stats) p.stats = described_stats();
      if (const auto* m = std::get_if<int64_t PolicyParams::*>(&k.member))
        p.*(*m) = k.min - 1;
      else if (const auto* r = std::get_if<double PolicyParams::*>(&k.member))
        p.*(*r) = k.max_real + 0.5;
      else
        continue;  // the seed: every value is a draw
      const std::string msg = test::error_of([&] { make_kv_policy(d.name, p, described_geometry()); });
      EXPECT_NE(msg.find(k.flag), std::string::npos) << d.name << " " << k.flag << ": " << msg;
    }
  }
}
