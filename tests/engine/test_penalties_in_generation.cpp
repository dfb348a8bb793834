// The frequency and presence penalties inside a real generation: at each greedy step the
// chosen token is the best of the model's log-probabilities once the tokens generated so far
// (not the prompt's) are penalised by definition, checked against the step's 20 most likely
// alternatives; and the penalties change what is generated.
#include <gtest/gtest.h>

#include <map>

#include "engine/generate.h"
#include "engine_test_util.h"

namespace triattn {
namespace {

TEST(PenaltiesInGeneration, EachGreedyStepTakesTheBestPenalisedToken) {
  auto model = Model::load(test::kTinyStories);
  const Tokenizer& tok = model->tokenizer();
  // A prompt that says twice what the model would say next: counting its tokens (which the
  // penalties must not) would change the first steps.
  const std::vector<int32_t> prompt =
      tok.encode("Once upon a time, there was a little girl. Once upon a time, there was a little", tok.add_bos_default());
  KvSettings kv;
  const PolicyFactory policies(*model, kv);
  ThreadPool pool(2);
  Forward forward(*model, &pool);
  SamplerParams sp;
  sp.temperature = 0;
  sp.frequency_penalty = 1.0f;
  sp.presence_penalty = 0.5f;
  Sequence seq(*model, policies);
  Sampler sampler(sp);
  GenerateOptions opt;
  opt.n_predict = 40;
  opt.stop_at_eog = false;
  opt.logprobs = 20;
  const GenerateResult r = generate(*model, forward, seq, prompt, opt, sampler);
  ASSERT_EQ(r.tokens.size(), 40u);
  ASSERT_EQ(r.logprobs.size(), 40u);
  std::map<int32_t, int> count;  // generated so far
  const auto penalised = [&](int32_t id, float logprob) {
    const auto it = count.find(id);
    const int c = it == count.end() ? 0 : it->second;
    return logprob - static_cast<float>(c) * sp.frequency_penalty - (c > 0 ? sp.presence_penalty : 0.0f);
  };
  int overruled = 0;  // steps where the penalties beat the model's own first choice
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    const TokenLogprob& lp = r.logprobs[i];
    ASSERT_EQ(lp.id, r.tokens[i]);
    const float chosen = penalised(lp.id, lp.logprob);
    for (const auto& [id, logprob] : lp.top) EXPECT_GE(chosen, penalised(id, logprob) - 1e-4f) << "step " << i << " token " << id;
    overruled += lp.top.at(0).first != lp.id;
    ++count[r.tokens[i]];
  }
  EXPECT_GT(overruled, 0);
  // Without penalties the same prompt gives another text.
  SamplerParams plain;
  plain.temperature = 0;
  EXPECT_NE(generate_fresh(*model, forward, policies, prompt, 40, plain).tokens, r.tokens);
}

}  // namespace
}  // namespace triattn
