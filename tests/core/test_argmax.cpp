// argmax (core/argmax.h) against its definition: a plain scan for the first largest value,
// NaNs skipped, over lengths that exercise the four lanes and the tail.
#include "core/argmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace triattn {
namespace {

int64_t reference(const std::vector<float>& v) {
  int64_t r = -1;
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isnan(v[i]) && (r < 0 || v[i] > v[static_cast<size_t>(r)])) r = static_cast<int64_t>(i);
  return r;
}

TEST(Argmax, SmallCases) {
  EXPECT_EQ(argmax({}), -1);
  const std::vector<float> one = {-3.0f}, tie = {0, 0}, up = {0, std::log(3.0f)};
  EXPECT_EQ(argmax(one), 0);
  EXPECT_EQ(argmax(tie), 0);
  EXPECT_EQ(argmax(up), 1);
  const std::vector<float> nans = {NAN, NAN, NAN, NAN, NAN};
  EXPECT_EQ(argmax(nans), -1);
  const std::vector<float> inf = {-INFINITY, -INFINITY, -INFINITY};
  EXPECT_EQ(argmax(inf), 0);  // -inf is a value: the first one is taken
  const std::vector<float> nan_first = {NAN, 1.0f, 2.0f, NAN, 2.0f};
  EXPECT_EQ(argmax(nan_first), 2);
}

// Random vectors with many ties (values from a small set), NaNs and infinities, every
// length from 0 to 40 and a vocabulary-sized one: the lowest index of the maximum.
TEST(Argmax, MatchesScanWithTiesAndNans) {
  std::mt19937 rng(7);
  const float pool[] = {-INFINITY, -1.0f, 0.0f, 0.5f, 2.0f, INFINITY, NAN};
  std::vector<int> lengths;
  for (int n = 0; n <= 40; ++n) lengths.push_back(n);
  lengths.push_back(151936);
  for (int n : lengths)
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> v(static_cast<size_t>(n));
      const int kinds = 1 + static_cast<int>(rng() % 7);  // sometimes only -inf, or only NaN-free
      for (float& x : v) x = pool[rng() % static_cast<unsigned>(kinds)];
      ASSERT_EQ(argmax(v), reference(v)) << "length " << n << " trial " << trial;
    }
}

}  // namespace
}  // namespace triattn
