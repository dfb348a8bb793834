// frequency_penalty, presence_penalty and logit_bias through the server: a reply equals the
// engine run alone with the same sampler settings, and a bias of -100 on the token greedy
// decoding would take removes it; metadata comes back with a whole chat completion (not with
// its stream's chunks, as OpenAI's).
#include <gtest/gtest.h>

#include "server_test_fixture.h"

namespace triattn::server {
namespace {

using json = nlohmann::json;

class ServerPenaltiesTest : public test::ServerTest {
 protected:
  // The engine alone, greedy with these settings, stopping at end-of-generation as the server does.
  static GenerateResult penalised_alone(const std::vector<int32_t>& prompt, int64_t n, SamplerParams sp) {
    KvSettings kv;
    PolicyFactory f(*model_, kv);
    Sequence seq(*model_, f);
    ThreadPool pool(2);
    Forward fwd(*model_, &pool);
    sp.temperature = 0;
    Sampler sampler(sp);
    GenerateOptions opt;
    opt.n_predict = n;
    return generate(*model_, fwd, seq, prompt, opt, sampler);
  }
};

TEST_F(ServerPenaltiesTest, PenaltiesAndBiasReachTheSampler) {
  auto s = start();
  const std::string prompt = "Once upon a time,";
  const std::vector<int32_t> prompt_ids = ids(prompt);
  const int32_t first = penalised_alone(prompt_ids, 1, {}).tokens.at(0);
  SamplerParams sp;
  sp.frequency_penalty = 1.5f;
  sp.presence_penalty = 0.5f;
  sp.logit_bias = {{first, -100.0f}};
  const GenerateResult want = penalised_alone(prompt_ids, 30, sp);
  ASSERT_NE(want.tokens.at(0), first);
  const auto r = post(*s, "/v1/completions",
                      {{"prompt", prompt},
                       {"max_tokens", 30},
                       {"temperature", 0},
                       {"frequency_penalty", 1.5},
                       {"presence_penalty", 0.5},
                       {"logit_bias", {{std::to_string(first), -100}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["choices"][0]["text"], want.text);
  // Without them the reply is another one.
  EXPECT_NE(penalised_alone(prompt_ids, 30, {}).text, want.text);
}

TEST_F(ServerPenaltiesTest, MetadataComesBackWithAWholeChatCompletion) {
  auto s = start();
  const json msgs = json::array({{{"role", "user"}, {"content", "hi"}}});
  const json metadata = {{"run", "7"}, {"who", "test"}};
  auto r = post(*s, "/v1/chat/completions",
                {{"messages", msgs}, {"max_tokens", 3}, {"metadata", metadata}, {"user", "u1"}, {"safety_identifier", "x"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["metadata"], metadata);
  r = post(*s, "/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 3}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_FALSE(json::parse(r->body).contains("metadata"));
  r = post(*s, "/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 3}, {"metadata", metadata}, {"stream", true}});
  ASSERT_EQ(r->status, 200) << r->body;
  const std::vector<json> chunks = events(r->body);
  ASSERT_GT(chunks.size(), 1u);
  for (const json& e : chunks) {
    if (e.is_object()) {
      EXPECT_FALSE(e.contains("metadata")) << e.dump();
    }
  }
}

}  // namespace
}  // namespace triattn::server
