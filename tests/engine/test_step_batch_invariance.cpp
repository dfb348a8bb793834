// A sequence's logits do not depend on what shares its engine step: the same tokens fed to
// sequences at every position of a batch give the same logits bit for bit, step after step
// (what lets eval batch its configurations and the server batch its clients).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "core/thread_pool.h"
#include "engine/step.h"
#include "engine_test_util.h"

namespace triattn {
namespace {

void expect_same_logits_at_every_position(const std::string& model_path, int batch, int steps) {
  const auto model = Model::load(model_path);
  ThreadPool pool(2);
  Forward forward(*model, &pool);
  EngineStep step(forward);
  KvSettings kv;
  const PolicyFactory policies(*model, kv);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int b = 0; b < batch; ++b) seqs.push_back(std::make_unique<Sequence>(*model, policies));
  std::vector<int32_t> tokens(static_cast<size_t>(steps));
  for (int i = 0; i < steps; ++i) tokens[static_cast<size_t>(i)] = 1 + (i * 37) % (model->config().vocab_size - 1);
  std::vector<StepItem> items(static_cast<size_t>(batch));
  for (int i = 0; i < steps; ++i) {
    for (int b = 0; b < batch; ++b) {
      items[static_cast<size_t>(b)].seq = seqs[static_cast<size_t>(b)].get();
      items[static_cast<size_t>(b)].tokens = std::span<const int32_t>(&tokens[static_cast<size_t>(i)], 1);
    }
    ASSERT_EQ(step.run(items), static_cast<size_t>(batch));
    const std::vector<float>& first = step.logits(0);
    for (int b = 1; b < batch; ++b) {
      const std::vector<float>& l = step.logits(static_cast<size_t>(b));
      ASSERT_EQ(l.size(), first.size());
      ASSERT_EQ(std::memcmp(l.data(), first.data(), sizeof(float) * l.size()), 0)
          << "step " << i << ": position " << b << " of " << batch << " differs from position 0";
    }
  }
}

TEST(StepBatchInvariance, EveryPositionOfABatchGetsTheSameLogits) {
  for (int batch : {2, 3, 5, 7, 19}) expect_same_logits_at_every_position(test::kTinyStories, batch, 40);
  for (int batch : {3, 19})
    expect_same_logits_at_every_position(std::string(TRIATTN_SHARED_DIR) + "/models/stories260k/stories260K.bin", batch,
                                         40);
}

}  // namespace
}  // namespace triattn
