// The server's n choices, log-probabilities (chat and completions formats, streamed and not),
// echo with prompt log-probabilities (lm-evaluation-harness's log-likelihood request),
// conversation reuse reported as cached prompt tokens, and the latency histograms in /metrics.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>

#include "server_test_fixture.h"
#include "engine/step.h"

namespace triattn::server {
namespace {

using json = nlohmann::json;
using ServerChoicesTest = test::ServerTest;

TEST_F(ServerChoicesTest, NChoicesEachWithItsIndexAndGreedyOnesAgree) {
  auto s = start();
  const auto r = post(*s, "/v1/completions", {{"prompt", "Once upon a time,"}, {"max_tokens", 20}, {"temperature", 0},
                                              {"n", 3}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 3u);
  const std::string want = alone(ids("Once upon a time,"), 20);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(j["choices"][c]["index"], c);
    EXPECT_EQ(j["choices"][c]["text"], want);
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], ids("Once upon a time,").size());
  EXPECT_EQ(j["usage"]["completion_tokens"], 60);
  // Sampled and streamed: every choice's chunks carry its index, and each ends once.
  const auto st = post(*s, "/v1/chat/completions",
                       {{"messages", {{{"role", "user"}, {"content", "Tell me a story."}}}}, {"max_tokens", 12},
                        {"temperature", 1.0}, {"seed", 3}, {"n", 2}, {"stream", true}});
  ASSERT_EQ(st->status, 200);
  std::map<int, int> finishes;
  for (const json& e : events(st->body))
    if (e.is_object())
      for (const json& c : e["choices"])
        if (!c["finish_reason"].is_null()) ++finishes[c["index"].get<int>()];
  EXPECT_EQ(finishes, (std::map<int, int>{{0, 1}, {1, 1}}));
}

TEST_F(ServerChoicesTest, ChatLogprobsArePerTokenWithAlternatives) {
  auto s = start();
  const json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 8}, {"temperature", 0},
                     {"logprobs", true}, {"top_logprobs", 3}};
  const auto r = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(r->status, 200) << r->body;
  const json c = json::parse(r->body)["choices"][0];
  const json& content = c["logprobs"]["content"];
  ASSERT_FALSE(content.empty());
  std::string joined;
  for (const json& t : content) {
    ASSERT_EQ(t["top_logprobs"].size(), 3u);
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    // Greedy: the chosen token is the most likely one.
    EXPECT_EQ(t["top_logprobs"][0]["token"], t["token"]);
    EXPECT_DOUBLE_EQ(t["top_logprobs"][0]["logprob"].get<double>(), t["logprob"].get<double>());
    std::string bytes;
    for (const json& b : t["bytes"]) bytes.push_back(static_cast<char>(b.get<int>()));
    EXPECT_EQ(bytes, t["token"].get<std::string>());
    joined += t["token"].get<std::string>();
  }
  EXPECT_EQ(joined.substr(0, c["message"]["content"].get<std::string>().size()), c["message"]["content"]);
  // Streamed: the same tokens, spread over the chunks.
  json sb = body;
  sb["stream"] = true;
  const auto st = post(*s, "/v1/chat/completions", sb);
  json streamed = json::array();
  for (const json& e : events(st->body))
    if (e.is_object() && !e["choices"].empty() && e["choices"][0].contains("logprobs") &&
        !e["choices"][0]["logprobs"].is_null())
      for (const json& t : e["choices"][0]["logprobs"]["content"]) streamed.push_back(t);
  EXPECT_EQ(streamed, content);
  // Without logprobs: null.
  EXPECT_TRUE(json::parse(post(*s, "/v1/chat/completions", {{"messages", body["messages"]}, {"max_tokens", 2}})->body)
                  ["choices"][0]["logprobs"]
                      .is_null());
}

// lm-evaluation-harness's log-likelihood request: the prompt as token ids, echo, logprobs,
// max_tokens 0. The prompt's log-probabilities are the model's, the first token's null.
TEST_F(ServerChoicesTest, EchoGivesThePromptsLogprobs) {
  auto s = start();
  const std::vector<int32_t> p = ids("Once upon a time, there was a little dog");
  json prompt = json::array();
  for (int32_t id : p) prompt.push_back(id);
  const auto r = post(*s, "/v1/completions",
                      {{"prompt", prompt}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 1}, {"temperature", 0}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json c = json::parse(r->body)["choices"][0];
  const json& lp = c["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), p.size());
  ASSERT_EQ(lp["token_logprobs"].size(), p.size());
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(c["text"], model_->tokenizer().decode(p));
  // Each is log p(token | the tokens before it): the engine's logits after that prefix.
  KvSettings kv;
  PolicyFactory f(*model_, kv);
  ThreadPool pool(2);
  Forward fwd(*model_, &pool);
  EngineStep step(fwd);
  for (size_t t : {size_t{1}, p.size() / 2, p.size() - 1}) {
    Sequence seq(*model_, f);
    const std::vector<float> logits = feed(step, seq, std::span(p).first(t));
    double max = -1e30, sum = 0;
    for (float x : logits) max = std::max<double>(max, x);
    for (float x : logits) sum += std::exp(x - max);
    EXPECT_NEAR(lp["token_logprobs"][t].get<double>(), logits[static_cast<size_t>(p[t])] - max - std::log(sum), 2e-3);
    EXPECT_EQ(lp["top_logprobs"][t].size(), 1u);
  }
  for (size_t i = 1; i < p.size(); ++i) EXPECT_GE(lp["text_offset"][i].get<int>(), lp["text_offset"][i - 1].get<int>());
  // Echo with generation: the prompt text, then the reply; offsets run on into the reply.
  const auto g = post(*s, "/v1/completions", {{"prompt", "The cat"}, {"max_tokens", 5}, {"echo", true}, {"temperature", 0}});
  EXPECT_EQ(json::parse(g->body)["choices"][0]["text"], "The cat" + alone(ids("The cat"), 5));
}

TEST_F(ServerChoicesTest, CompletionLogprobsStreamedEqualWhole) {
  auto s = start();
  json body = {{"prompt", "The little girl"}, {"max_tokens", 16}, {"temperature", 0}, {"logprobs", 2}};
  const json whole = json::parse(post(*s, "/v1/completions", body)->body)["choices"][0]["logprobs"];
  ASSERT_EQ(whole["tokens"].size(), 16u);
  EXPECT_EQ(whole["text_offset"][0], 0);
  body["stream"] = true;
  json tokens = json::array(), offsets = json::array();
  for (const json& e : events(post(*s, "/v1/completions", body)->body))
    if (e.is_object() && !e["choices"].empty() && !e["choices"][0]["logprobs"].is_null()) {
      for (const json& t : e["choices"][0]["logprobs"]["tokens"]) tokens.push_back(t);
      for (const json& o : e["choices"][0]["logprobs"]["text_offset"]) offsets.push_back(o);
    }
  EXPECT_EQ(tokens, whole["tokens"]);
  EXPECT_EQ(offsets, whole["text_offset"]);
}

TEST_F(ServerChoicesTest, TheNextTurnReusesTheKeptCacheAndSaysSo) {
  ServerOptions o;
  o.scheduler.reuse_slots = 2;
  auto s = start(o);
  const std::vector<int32_t> p1 = ids("Once upon a time, there was a");
  json prompt = json::array();
  for (int32_t id : p1) prompt.push_back(id);
  const json a = json::parse(post(*s, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 10}, {"temperature", 0}})->body);
  EXPECT_EQ(a["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  // The client sends the whole conversation back, with more: the reply's token ids are the
  // same greedy run through the engine.
  json next = prompt;
  std::vector<int32_t> p2 = p1;
  KvSettings kv;
  PolicyFactory f(*model_, kv);
  ThreadPool pool(2);
  const GenerateResult g = [&] {
    Sequence seq(*model_, f);
    Forward fwd(*model_, &pool);
    SamplerParams sp;
    sp.temperature = 0;
    Sampler sampler(sp);
    GenerateOptions opt;
    opt.n_predict = 10;
    return generate(*model_, fwd, seq, p1, opt, sampler);
  }();
  for (int32_t id : g.tokens) {
    next.push_back(id);
    p2.push_back(id);
  }
  for (int32_t id : ids(" The end.")) {
    if (id == model_->tokenizer().bos_id()) continue;
    next.push_back(id);
    p2.push_back(id);
  }
  const json b = json::parse(post(*s, "/v1/completions", {{"prompt", next}, {"max_tokens", 8}, {"temperature", 0}})->body);
  EXPECT_EQ(b["usage"]["prompt_tokens"], p2.size());
  EXPECT_EQ(b["usage"]["prompt_tokens_details"]["cached_tokens"], p1.size() + g.tokens.size() - 1);
  EXPECT_EQ(b["choices"][0]["text"], alone(p2, 8));
  const std::string m = httplib::Client("127.0.0.1", s->port()).Get("/metrics")->body;
  EXPECT_NE(m.find("triattn_prompt_tokens_reused_total " + std::to_string(p1.size() + g.tokens.size() - 1)),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("triattn_sequences_kept "), std::string::npos);
}

TEST_F(ServerChoicesTest, MetricsHaveLatencyHistograms) {
  auto s = start();
  ASSERT_EQ(post(*s, "/v1/completions", {{"prompt", "A dog"}, {"max_tokens", 6}, {"temperature", 0}})->status, 200);
  const std::string m = httplib::Client("127.0.0.1", s->port()).Get("/metrics")->body;
  EXPECT_NE(m.find("# TYPE triattn_time_to_first_token_seconds histogram"), std::string::npos) << m;
  EXPECT_NE(m.find("triattn_time_to_first_token_seconds_count 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("triattn_time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\n"), std::string::npos);
  // Six tokens: five gaps between them.
  EXPECT_NE(m.find("triattn_inter_token_seconds_count 5\n"), std::string::npos) << m;
  EXPECT_NE(m.find("triattn_inter_token_seconds_bucket{le=\"+Inf\"} 5\n"), std::string::npos);
}

}  // namespace
}  // namespace triattn::server
