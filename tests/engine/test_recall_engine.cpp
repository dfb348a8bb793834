// The cold tier and recall through the engine (--kv-recall): on bytelm-2k's first held-out
// passkey prompt, a budget that drops the needle answers wrongly without recall and rightly
// with it, inside the same hot bound, and the prompt's tail fed again after the prompt-end
// recall counts once; with nothing evicted, recall changes no token; a fork carries the cold tier.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "engine/engine_test_util.h"
#include "engine/generate.h"
#include "engine/kv_setup.h"
#include "engine/sequence.h"
#include "engine/step.h"
#include "model/model.h"

namespace triattn {
namespace {

const std::string kByteLm = std::string(TRIATTN_SHARED_DIR) + "/models/bytelm-2k";

struct RecallNeedle {
  std::string text, answer;
};

RecallNeedle recall_first_needle() {
  std::ifstream in(kByteLm + "/needle_eval.jsonl");
  std::string line;
  if (!std::getline(in, line)) fail("cannot read ", kByteLm, "/needle_eval.jsonl");
  const nlohmann::json j = nlohmann::json::parse(line);
  return {j.at("text").get<std::string>(), j.at("answer").get<std::string>()};
}

KvSettings recall_settings(const std::string& policy, int64_t budget, bool recall) {
  KvSettings kv;
  kv.policy = policy;
  kv.params.budget = budget;
  kv.params.window = 64;
  kv.params.divide_length = 128;
  kv.recall.on = recall;
  return kv;
}

class RecallEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = Model::load(kByteLm); }
  static void TearDownTestSuite() { model_.reset(); }
  static GenerateResult run(const KvSettings& kv, const std::string& text, int64_t n) {
    const Tokenizer& tok = model_->tokenizer();
    const PolicyFactory f(*model_, kv);
    return test::greedy_run(*model_, f, tok.encode(text, tok.add_bos_default()), n, nullptr);
  }
  static inline std::shared_ptr<const Model> model_;
};

TEST_F(RecallEngine, BringsBackTheNeedleTheBudgetDropped) {
  const RecallNeedle needle = recall_first_needle();
  const GenerateResult without = run(recall_settings("streaming", 128, false), needle.text, 6);
  const GenerateResult with = run(recall_settings("streaming", 128, true), needle.text, 6);
  EXPECT_NE(without.text, needle.answer);
  EXPECT_EQ(with.text, needle.answer);
  EXPECT_LE(with.stats.kv_peak_tokens, 128 + 128);  // the hot bound B + β
  EXPECT_GT(with.stats.recalled_rows, 0);
  EXPECT_GT(with.stats.kv_cold_peak_bytes, 0u);
  EXPECT_EQ(without.stats.recalled_rows, 0);
  EXPECT_EQ(with.stats.prompt_tokens, without.stats.prompt_tokens);
}

TEST_F(RecallEngine, FeedsThePromptTailAgainWithoutCountingItTwice) {
  // The prompt's end recalls, then its last tokens go in again (Sequence::rewind_for_recall):
  // each prompt token still has one log-probability, and the prompt counts once.
  const RecallNeedle needle = recall_first_needle();
  const Tokenizer& tok = model_->tokenizer();
  const std::vector<int32_t> prompt = tok.encode(needle.text, tok.add_bos_default());
  const PolicyFactory f(*model_, recall_settings("streaming", 128, true));
  Sequence seq(*model_, f);
  Forward fwd(*model_, nullptr);
  SamplerParams sp;
  sp.temperature = 0;
  Sampler sampler(sp);
  GenerateOptions opt;
  opt.n_predict = 6;
  opt.stop_at_eog = false;
  opt.prompt_logprobs = 0;
  const GenerateResult r = generate(*model_, fwd, seq, prompt, opt, sampler);
  EXPECT_EQ(r.text, needle.answer);
  ASSERT_EQ(r.prompt_logprobs.size(), prompt.size() - 1);
  for (size_t i = 0; i < r.prompt_logprobs.size(); ++i) ASSERT_EQ(r.prompt_logprobs[i].id, prompt[i + 1]) << i;
  EXPECT_EQ(r.stats.prompt_tokens, static_cast<int64_t>(prompt.size()));
  EXPECT_EQ(seq.history().size(), prompt.size() + 5);  // the last generated token is not fed
}

TEST_F(RecallEngine, ChangesNothingWhenNothingWasEvicted) {
  const std::string text = recall_first_needle().text.substr(0, 600);
  for (const char* policy : {"streaming", "h2o", "snapkv"}) {
    const GenerateResult plain = run(recall_settings(policy, 1024, false), text, 24);
    const GenerateResult with = run(recall_settings(policy, 1024, true), text, 24);
    EXPECT_EQ(with.tokens, plain.tokens) << policy;
    EXPECT_EQ(with.stats.recalled_rows, 0) << policy;
    EXPECT_EQ(with.stats.kv_peak_tokens, plain.stats.kv_peak_tokens) << policy;
  }
}

TEST_F(RecallEngine, WorksBesideAPolicyWithPerRowObservations) {
  // H2O's accumulators follow the rows a recall moves (KvPolicy::on_recall); a mismatch throws.
  const RecallNeedle needle = recall_first_needle();
  const GenerateResult r = run(recall_settings("h2o", 128, true), needle.text, 40);
  EXPECT_EQ(r.stats.generated_tokens, 40);
  EXPECT_GT(r.stats.recalled_rows, 0);
  EXPECT_LE(r.stats.kv_peak_tokens, 256);
}

TEST_F(RecallEngine, AForkCarriesTheColdTier) {
  const RecallNeedle needle = recall_first_needle();
  const Tokenizer& tok = model_->tokenizer();
  const PolicyFactory f(*model_, recall_settings("streaming", 128, true));
  Sequence seq(*model_, f);
  Forward fwd(*model_, nullptr);
  EngineStep step(fwd);
  feed(step, seq, tok.encode(needle.text, tok.add_bos_default()));
  ASSERT_GT(seq.cache().cold().bytes(), 0u);
  const std::unique_ptr<Sequence> copy = seq.fork(f);
  EXPECT_EQ(copy->cache().cold().bytes(), seq.cache().cold().bytes());
  EXPECT_TRUE(copy->recalls());
}

TEST_F(RecallEngine, RefusesAPolicyThatEvictsNothing) {
  EXPECT_THROW(PolicyFactory(*model_, recall_settings("full", 128, true)), Error);
  KvSettings bad = recall_settings("streaming", 128, true);
  bad.recall.quota = 0;
  EXPECT_THROW(PolicyFactory(*model_, bad), Error);
}

}  // namespace
}  // namespace triattn
