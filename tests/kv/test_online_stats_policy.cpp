// --stats auto at the registry: triattention takes statistics it measures itself
// (PolicyParams::online_stats) in place of a file, and feeds them what the forward pass
// reports; the combinations that contradict it are refused by name.
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "kv/online_stats.h"
#include "kv/policy.h"

using namespace triattn;

namespace {
using triattn::test::error_of;

AttentionGeometry online_geometry() {
  AttentionGeometry g;
  g.n_layers = 1, g.n_heads = 2, g.n_kv_heads = 1, g.head_dim = 4;
  g.rope_freqs = {1.0f, 0.01f};
  return g;
}

// Counts the tokens it is fed (the engine's is calibration's accumulator).
class CountingStats final : public OnlineStats {
 public:
  void add(int, int64_t, int64_t n_tokens, const float*, const float*) override { n_ += n_tokens; }
  int64_t tokens() const override { return n_; }
  HeadStats result() const override { return {}; }
  std::unique_ptr<OnlineStats> clone() const override { return std::make_unique<CountingStats>(*this); }

 private:
  int64_t n_ = 0;
};

std::unique_ptr<OnlineStats> make_counting_stats(const AttentionGeometry&) { return std::make_unique<CountingStats>(); }

PolicyParams online_params() {
  PolicyParams p;
  p.online_stats = make_counting_stats;
  return p;
}

}  // namespace

TEST(OnlineStatsPolicy, TriAttentionMeasuresWhatTheForwardPassReports) {
  auto policy = make_kv_policy("triattention", online_params(), online_geometry());
  ASSERT_NE(policy->online_stats(), nullptr);
  const float q[16] = {}, k[8] = {};
  policy->observe_pre_rope(0, 0, 2, q, k);
  policy->observe_pre_rope(0, 2, 1, q, k);
  EXPECT_EQ(policy->online_stats()->tokens(), 3);
  const auto copy = policy->clone();
  policy->observe_pre_rope(0, 3, 1, q, k);
  EXPECT_EQ(copy->online_stats()->tokens(), 3) << "a copy keeps its own statistics";
  EXPECT_EQ(policy->online_stats()->tokens(), 4);
  // With a file there is nothing to measure.
  PolicyParams file;
  file.stats = std::make_shared<HeadStats>();
  EXPECT_EQ(make_kv_policy("full", file, online_geometry())->online_stats(), nullptr);
}

TEST(OnlineStatsPolicy, ContradictionsAreRefusedByName) {
  // triattention-split ranks with a file's statistics only.
  std::string msg = error_of([] { make_kv_policy("triattention-split", online_params(), online_geometry()); });
  EXPECT_NE(msg.find("'triattention-split' cannot measure its statistics itself (--stats auto is for triattention)"),
            std::string::npos)
      << msg;
  // A file and auto at once.
  PolicyParams both = online_params();
  both.stats = std::make_shared<HeadStats>();
  msg = error_of([&] { make_kv_policy("triattention", both, online_geometry()); });
  EXPECT_NE(msg.find("both calibrated statistics and --stats auto"), std::string::npos) << msg;
  // --auto-stats-min without auto.
  PolicyParams counted;
  counted.stats = std::make_shared<HeadStats>();
  counted.auto_stats_min = PolicyParams{}.auto_stats_min + 1;
  msg = error_of([&] { make_kv_policy("triattention", counted, online_geometry()); });
  EXPECT_NE(msg.find("--auto-stats-min (triattention) applies to --stats auto only"), std::string::npos) << msg;
  // Neither: the message offers both.
  msg = error_of([] { make_kv_policy("triattention", PolicyParams{}, online_geometry()); });
  EXPECT_NE(msg.find("or --stats auto"), std::string::npos) << msg;
  // A policy that uses no statistics ignores them, as it ignores a file.
  EXPECT_EQ(make_kv_policy("snapkv", online_params(), online_geometry())->online_stats(), nullptr);
}
