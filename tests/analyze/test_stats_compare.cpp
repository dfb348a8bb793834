// `analyze --compare`: the per-head difference of two calibrations' query centres,
// on statistics whose answer is known (a rotation of every centre by one angle), and the
// refusal of statistics of different models.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <memory>
#include <string>

#include "analyze/stats_compare.h"
#include "core/error.h"

namespace triattn {
namespace {

HeadStats stats(int L, int H, int d, double angle) {
  HeadStats s;
  s.n_layers = L, s.n_heads = H, s.n_kv_heads = H, s.head_dim = d;
  for (int i = 0; i < L * H * d / 2; ++i) {
    const std::complex<double> c = std::polar(1.0 + 0.1 * i, 0.3 * i + angle);
    s.q_mean_real.push_back(static_cast<float>(c.real()));
    s.q_mean_imag.push_back(static_cast<float>(c.imag()));
    s.q_abs_mean.push_back(static_cast<float>(2 * std::abs(c)));
  }
  return s;
}

LoadedStats loaded(const HeadStats& s, const std::string& arch) {
  LoadedStats l;
  l.stats = std::make_shared<HeadStats>(s);
  l.info.architecture = arch;
  l.info.n_layers = s.n_layers, l.info.n_heads = s.n_heads, l.info.head_dim = s.head_dim;
  for (int f = 0; f < s.head_dim / 2; ++f) l.info.rope_freqs.push_back(std::pow(10000.0f, -2.0f * f / s.head_dim));
  return l;
}

TEST(StatsCompare, IdenticalCentresAgreeExactly) {
  const HeadStats a = stats(2, 3, 8, 0);
  const StatsComparison c = compare_stats(a, a);
  ASSERT_EQ(c.heads.size(), 6u);
  for (const HeadCentreDifference& d : c.heads) {
    EXPECT_NEAR(d.cosine, 1, 1e-12);
    EXPECT_NEAR(d.relative_distance, 0, 1e-12);
    EXPECT_NEAR(d.weighted_R_first, 0.5, 1e-6);  // |E q| = E|q| / 2 in every band
    EXPECT_DOUBLE_EQ(d.weighted_R_first, d.weighted_R_second);
  }
  EXPECT_NEAR(c.mean_cosine, 1, 1e-12);
}

TEST(StatsCompare, ARotationByThetaGivesCosThetaAndChordDistance) {
  const double theta = 0.4;
  const StatsComparison c = compare_stats(stats(2, 2, 4, 0), stats(2, 2, 4, theta));
  for (const HeadCentreDifference& d : c.heads) {
    EXPECT_NEAR(d.cosine, std::cos(theta), 1e-6);
    EXPECT_NEAR(d.relative_distance, 2 * std::sin(theta / 2), 1e-6);
  }
  EXPECT_NEAR(c.min_cosine, std::cos(theta), 1e-6);
  EXPECT_NEAR(c.max_relative_distance, 2 * std::sin(theta / 2), 1e-6);
  const std::string table = comparison_table(c, "a.st", "b.st");
  EXPECT_NE(table.find("S1 = a.st, S2 = b.st"), std::string::npos);
  EXPECT_NE(table.find("mean cosine 0.9211"), std::string::npos) << table;
  const nlohmann::json j = comparison_json(c, "a.st", loaded(stats(2, 2, 4, 0), "llama"), "b.st",
                                           loaded(stats(2, 2, 4, theta), "llama"));
  EXPECT_EQ(j["heads"].size(), 4u);
  EXPECT_NEAR(j["summary"]["mean_cosine"].get<double>(), std::cos(theta), 1e-6);
}

TEST(StatsCompare, RefusesStatisticsOfDifferentModels) {
  const LoadedStats a = loaded(stats(2, 2, 8, 0), "llama"), b = loaded(stats(3, 2, 4, 0), "qwen3");
  try {
    check_comparable(a, "code.st", b, "maths.st");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("code.st and maths.st are statistics of different models"), std::string::npos) << m;
    EXPECT_NE(m.find("n_layers 2 vs 3"), std::string::npos) << m;
    EXPECT_NE(m.find("head_dim 8 vs 4"), std::string::npos) << m;
    EXPECT_NE(m.find("architecture 'llama' vs 'qwen3'"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(check_comparable(a, "x", a, "y"));
  // A file that records no architecture (a TRIA file) compares with one that does.
  EXPECT_NO_THROW(check_comparable(a, "ours.st", loaded(stats(2, 2, 8, 0), ""), "theirs.triattention"));
}

}  // namespace
}  // namespace triattn
