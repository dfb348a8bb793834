// The logit bias and the frequency and presence penalties against their definitions: bias
// added first, then the repetition penalty, then logit[t] -= count[t] * frequency +
// (count[t] > 0) * presence over the generated tokens only; all before the grammar mask, and
// for greedy as well as sampled draws.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "engine/sampler.h"

namespace triattn {
namespace {

SamplerParams penalties_greedy() {
  SamplerParams p;
  p.temperature = 0;
  return p;
}

void penalties_expect_logits(std::span<const float> got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "token " << i;
}

TEST(SamplerPenalties, FrequencyAndPresenceCountOnlyTheGeneratedTokens) {
  SamplerParams p = penalties_greedy();
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  Sampler s(p);
  const std::vector<float> logits = {1.0f, 2.0f, -1.0f, 0.5f, 3.0f};
  // Prompt {0, 4}, then generated 1, 1, 3: token 1 twice, token 3 once, the prompt's none.
  const std::vector<int32_t> history = {0, 4, 1, 1, 3};
  penalties_expect_logits(s.penalised(logits, history, 3),
                          {1.0f, 2.0f - 2 * 0.5f - 0.25f, -1.0f, 0.5f - 1 * 0.5f - 0.25f, 3.0f});
  // Every token of the history counted when it is all generated (the default).
  penalties_expect_logits(s.penalised(logits, history),
                          {1.0f - 0.75f, 2.0f - 1.25f, -1.0f, 0.5f - 0.75f, 3.0f - 0.75f});
  // Nothing generated yet: nothing penalised.
  penalties_expect_logits(s.penalised(logits, history, 0), logits);
}

TEST(SamplerPenalties, NegativePenaltiesRaiseRepeatedTokens) {
  SamplerParams p = penalties_greedy();
  p.frequency_penalty = -2.0f;
  p.presence_penalty = -1.0f;
  Sampler s(p);
  const std::vector<float> logits = {3.0f, 0.0f};
  const std::vector<int32_t> history = {1, 1};
  penalties_expect_logits(s.penalised(logits, history, 2), {3.0f, 0.0f + 4.0f + 1.0f});
  EXPECT_EQ(s.sample(logits, history, nullptr, 2), 1);
  EXPECT_EQ(s.sample(logits, history, nullptr, 0), 0);
}

// The order of llama.cpp's and vLLM's chains: the bias first, then the repetition penalty
// (which divides a positive logit, so it sees the biased value), then the additive penalties.
TEST(SamplerPenalties, BiasThenRepetitionThenFrequencyAndPresence) {
  SamplerParams p = penalties_greedy();
  p.logit_bias = {{2, 5.0f}, {0, -0.5f}};
  p.repeat_penalty = 2.0f;
  p.repeat_last_n = -1;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  Sampler s(p);
  const std::vector<float> logits = {1.0f, 2.0f, -1.0f, 0.5f, 3.0f};
  const std::vector<int32_t> history = {0, 4, 1, 1, 3};
  const std::vector<float> want = {
      (1.0f - 0.5f) / 2,          // biased, then repeated (prompt): halved
      2.0f / 2 - 2 * 0.5f - 0.25f,  // repeated, generated twice
      -1.0f + 5.0f,               // biased, never seen
      0.5f / 2 - 0.5f - 0.25f,    // repeated, generated once
      3.0f / 2,                   // repeated (prompt)
  };
  penalties_expect_logits(s.penalised(logits, history, 3), want);
  EXPECT_EQ(s.sample(logits, history, nullptr, 3), 2);  // greedy takes the biased token
  // The raw logits are left as they were.
  EXPECT_EQ(logits[2], -1.0f);
}

TEST(SamplerPenalties, LogitBiasBansAndForcesTokensWhenSampling) {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.logit_bias = {{0, -100.0f}, {3, 100.0f}};
  Sampler s(p);
  const std::vector<float> logits = {5.0f, 1.0f, 1.0f, 0.0f};
  for (int i = 0; i < 200; ++i) ASSERT_EQ(s.sample(logits, {}), 3);
  p.logit_bias = {{0, -100.0f}};
  Sampler banned(p);
  for (int i = 0; i < 200; ++i) ASSERT_NE(banned.sample(logits, {}), 0);
}

// The grammar masks what the penalties left: a penalised token the grammar allows is still
// the only choice, and a boosted token the grammar forbids is never drawn.
TEST(SamplerPenalties, TheGrammarMaskComesAfterThePenalties) {
  SamplerParams p = penalties_greedy();
  p.frequency_penalty = 2.0f;
  p.logit_bias = {{1, 100.0f}};
  Sampler s(p);
  const std::vector<float> logits = {0.0f, 0.0f, 1.0f, 0.5f};
  const std::vector<int32_t> history = {2, 2, 2};
  std::vector<uint64_t> allowed = {(1u << 2) | (1u << 3)};
  EXPECT_EQ(s.sample(logits, history, &allowed, 3), 3);  // 2 is penalised to -5, 1 is masked
  allowed = {1u << 2};
  EXPECT_EQ(s.sample(logits, history, &allowed, 3), 2);
}

TEST(SamplerPenalties, OutOfRangeValuesAreRefusedByName) {
  const float nan = std::nanf("");
  for (float v : {-2.5f, 2.01f, nan}) {
    SamplerParams p;
    p.frequency_penalty = v;
    EXPECT_THROW(Sampler{p}, Error);
    try {
      validate(p);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("frequency_penalty"), std::string::npos) << e.what();
    }
    p = {};
    p.presence_penalty = v;
    try {
      validate(p);
      ADD_FAILURE() << "presence_penalty " << v << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("presence_penalty"), std::string::npos) << e.what();
    }
  }
  const std::vector<std::vector<LogitBias>> bad = {{{0, 100.5f}}, {{0, nan}}, {{-1, 1.0f}}, {{3, 1.0f}, {3, 2.0f}}};
  for (const auto& b : bad) {
    SamplerParams p;
    p.logit_bias = b;
    try {
      validate(p);
      ADD_FAILURE() << "logit_bias for token " << b[0].id << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("logit_bias"), std::string::npos) << e.what();
    }
  }
  SamplerParams edge;
  edge.frequency_penalty = -2.0f;
  edge.presence_penalty = 2.0f;
  edge.logit_bias = {{0, -100.0f}, {1, 100.0f}};
  EXPECT_NO_THROW(validate(edge));
  // A token the vocabulary lacks is refused when the vocabulary is known, at the first draw.
  edge.logit_bias = {{7, 1.0f}};
  Sampler s(edge);
  const std::vector<float> logits = {0.0f, 1.0f};
  try {
    s.sample(logits, {});
    ADD_FAILURE() << "a bias for token 7 of a 2-token vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logit_bias"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace triattn
