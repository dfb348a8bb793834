// Forward::time_phases: the time of forward calls by phase (`triattn bench --phases`). Timing
// must not change what the pass computes, every phase a dense model has must be charged, and
// the phases, run one after another, cannot add up to more than the calls' own time.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "common/shared_files.h"
#include "model/forward.h"
#include "model/kv_shape.h"
#include "model/model.h"

namespace triattn {
namespace {

using test::kStoriesDir;

// Logits of a prefill and then of three decode steps, with or without phase timing.
std::vector<std::vector<float>> prefill_and_decode(Forward& fwd, const ModelConfig& c, double* wall) {
  KvCache cache(kv_cache_shape(c, DType::F16));
  const std::vector<int32_t> prompt = {1, 80, 147, 201, 282, 57, 8};
  const std::vector<int32_t> next = {500, 501, 502};
  std::vector<std::vector<float>> all, out;
  const auto t0 = std::chrono::steady_clock::now();
  ForwardItem item{&cache, prompt, ForwardItem::Logits::Last};
  fwd.run(std::span<const ForwardItem>(&item, 1), out);
  all.push_back(out[0]);
  for (const int32_t& t : next) {
    ForwardItem step{&cache, std::span<const int32_t>(&t, 1), ForwardItem::Logits::Last};
    fwd.run(std::span<const ForwardItem>(&step, 1), out);
    all.push_back(out[0]);
  }
  *wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return all;
}

TEST(ForwardPhases, EveryPhaseChargedWithinTheCallsTimeAndLogitsUnchanged) {
  auto model = Model::load(kStoriesDir);
  ThreadPool pool(2);
  Forward fwd(*model, &pool);
  double wall_plain = 0, wall_timed = 0;
  const auto plain = prefill_and_decode(fwd, model->config(), &wall_plain);

  ForwardPhases phases;
  fwd.time_phases(&phases);
  const auto timed = prefill_and_decode(fwd, model->config(), &wall_timed);
  fwd.time_phases(nullptr);
  EXPECT_EQ(timed, plain) << "timing changed the logits";

  double sum = 0;
  for (int i = 0; i < ForwardPhases::kCount; ++i) {
    // A dense model (TinyStories) goes through every phase; "ffn in" is gate and up.
    EXPECT_GT(phases.seconds[i], 0) << ForwardPhases::name(i);
    sum += phases.seconds[i];
  }
  EXPECT_LE(sum, wall_timed) << "the phases add up to more than the calls took";

  // Unset: later calls add nothing.
  const ForwardPhases before = phases;
  double wall = 0;
  prefill_and_decode(fwd, model->config(), &wall);
  for (int i = 0; i < ForwardPhases::kCount; ++i) EXPECT_EQ(phases.seconds[i], before.seconds[i]) << i;
}

TEST(ForwardPhases, NamesAreTheBenchColumns) {
  const char* expected[] = {"qkv", "attention", "output", "ffn in", "ffn down", "logits", "other"};
  for (int i = 0; i < ForwardPhases::kCount; ++i) EXPECT_STREQ(ForwardPhases::name(i), expected[i]);
  EXPECT_STREQ(ForwardPhases::name(ForwardPhases::kCount), "?");
}

}  // namespace
}  // namespace triattn
