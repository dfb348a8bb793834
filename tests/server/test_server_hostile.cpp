// triattn serve against the requests a hostile or careless client sends, each a reproduction
// of a defect the server once had: bodies nested 100,000 deep, non-streamed requests whose
// client left, unbounded max_tokens, request deadlines, prompt log-probabilities past the
// context, requests without a seed, form-encoded content types, tiny KV pools with huge
// budgets, the field named in each 400, methods and model ids, the first streamed chunk,
// a stream cut by a stop, and the health and metrics figures while it all goes on.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <set>
#include <thread>

#include "raw_client.h"
#include "server_test_fixture.h"

namespace triattn::server {
namespace {

using json = nlohmann::json;
using ServerHostileTest = test::ServerTest;
using triattn::test::count_status_lines;
using triattn::test::RawClient;
using triattn::test::eventually;
using test::metric;
using namespace std::chrono_literals;

std::string post_raw(int port, const std::string& path, const std::string& body,
                     const std::string& content_type = "application/json") {
  RawClient c(port);
  c.send("POST " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  return c.read_all(30);
}

std::string body_of(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

TEST_F(ServerHostileTest, BodiesNestedDeepAreRefusedBeforeAnyParsing) {
  ServerOptions o;
  o.max_body_bytes = 1 << 20;
  auto s = start(o);
  const std::string deep(100000, '[');
  for (const std::string& body : {"{\"prompt\":\"hi\",\"n\":" + deep + "}",
                                  "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template_kwargs\":{\"a\":" +
                                      deep + "}}"}) {
    for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
      const std::string r = post_raw(s->port(), path, body);
      ASSERT_EQ(count_status_lines(r, "400"), 1) << r.substr(0, 300);
      const json e = json::parse(body_of(r))["error"];
      EXPECT_NE(e["message"].get<std::string>().find("nests deeper than 64"), std::string::npos) << e.dump();
    }
  }
  // Within the limit, a deep value is an ordinary bad field.
  std::string ok_deep = "{\"prompt\":\"hi\",\"n\":";
  for (int i = 0; i < 60; ++i) ok_deep += "[";
  ok_deep += "1";
  for (int i = 0; i < 60; ++i) ok_deep += "]";
  const std::string r = post_raw(s->port(), "/v1/completions", ok_deep + "}");
  EXPECT_EQ(json::parse(body_of(r))["error"]["param"], "n") << r;
  EXPECT_EQ(post(*s, "/v1/completions", {{"prompt", "still here"}, {"max_tokens", 2}})->status, 200);
}

TEST_F(ServerHostileTest, ANonStreamedRequestIsCancelledWhenItsClientLeaves) {
  ServerOptions o;
  o.defaults.max_tokens_limit = 0;  // no limit: only the client's leaving ends these
  auto s = start(o);
  const std::string body = R"({"prompt":"Once","max_tokens":2147483647,"ignore_eos":true,)"
                           R"("kv_policy":"triattention","kv_budget":32,"divide_length":16,"window":8})";
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 6; ++i) {
    clients.push_back(std::make_unique<RawClient>(s->port()));
    clients.back()->send("POST /v1/completions HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
                         "\r\n\r\n" + body);
  }
  ASSERT_TRUE(eventually([&] { return metric(*s, "triattn_sequences_running") >= 4; }));
  clients.clear();  // all of them go away, as curl --max-time does
  EXPECT_TRUE(eventually([&] {
    return metric(*s, "triattn_sequences_running") == 0 && metric(*s, "triattn_sequences_queued") == 0;
  })) << "running " << metric(*s, "triattn_sequences_running");
  EXPECT_EQ(metric(*s, "triattn_kv_reserved_bytes"), 0);
  EXPECT_EQ(post(*s, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 3}})->status, 200);
  httplib::Client c("127.0.0.1", s->port());
  EXPECT_NE(c.Get("/metrics")->body.find("triattn_requests_total{status=\"499\"} 6"), std::string::npos);
}

TEST_F(ServerHostileTest, AStreamCutOffByItsClientEndsAsCancelled) {
  auto s = start();
  const std::string body = R"({"prompt":"Once","max_tokens":5000,"ignore_eos":true,"stream":true})";
  {
    RawClient c(s->port());
    c.send("POST /v1/completions HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    ASSERT_NE(c.read_for("data: {", 10).find("data: {"), std::string::npos) << c.received();
  }  // gone mid-stream
  EXPECT_TRUE(eventually([&] { return metric(*s, "triattn_sequences_running") == 0; }));
  httplib::Client c("127.0.0.1", s->port());
  const std::string m = c.Get("/metrics")->body;
  EXPECT_NE(m.find("triattn_requests_total{status=\"499\"} 1"), std::string::npos) << m;
  EXPECT_EQ(m.find("triattn_requests_total{status=\"200\"}"), std::string::npos) << m;
}

TEST_F(ServerHostileTest, MaxTokensAreCappedAndDeadlinesEndRequests) {
  ServerOptions o;
  o.defaults.max_tokens_limit = 1000;
  o.request_timeout_s = 1.0;
  o.scheduler.parallel = 1;
  auto s = start(o);
  auto r = post(*s, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 1001}});
  ASSERT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "max_tokens");
  EXPECT_NE(r->body.find("--max-tokens-limit"), std::string::npos) << r->body;
  // Within the cap but past the deadline: ends at the deadline with what it generated.
  const json endless = {{"prompt", "Once"},           {"max_tokens", 1000},     {"ignore_eos", true},
                        {"kv_policy", "triattention"}, {"kv_budget", 32},        {"divide_length", 16},
                        {"window", 8},                 {"repeat_penalty", 1.0}};
  std::thread first([&] {
    const auto t0 = std::chrono::steady_clock::now();
    const auto a = post(*s, "/v1/completions", endless);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 200) << a->body;
    const json j = json::parse(a->body);
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  });
  // A second one waits behind it (parallel 1) past its own deadline: 504.
  std::this_thread::sleep_for(200ms);
  const auto second = post(*s, "/v1/completions", endless);
  first.join();
  ASSERT_TRUE(second);
  // It may have started in time on a fast machine; then it ended by its deadline as well.
  EXPECT_TRUE(second->status == 504 || second->status == 200) << second->status << " " << second->body;
  if (second->status == 504) {
    EXPECT_NE(second->body.find("--request-timeout"), std::string::npos) << second->body;
  }
}

TEST_F(ServerHostileTest, PromptLogprobsStopAtTheContext) {
  auto s = start();
  json ids = json::array();
  for (int i = 0; i < 600; ++i) ids.push_back(1 + i % 300);  // past the context of 512
  const auto r = post(*s, "/v1/completions",
                      {{"prompt", ids}, {"echo", true}, {"logprobs", 5}, {"max_tokens", 0}, {"kv_policy", "triattention"},
                       {"kv_budget", 64}});
  ASSERT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "echo");
  // Within the context they come, one per prompt token after the first.
  json few = json::array({1, 20, 30, 40});
  const auto ok = post(*s, "/v1/completions", {{"prompt", few}, {"echo", true}, {"logprobs", 2}, {"max_tokens", 0}});
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(json::parse(ok->body)["choices"][0]["logprobs"]["token_logprobs"].size(), 4u);
}

TEST_F(ServerHostileTest, RequestsWithoutASeedGetTheirOwnAndSayWhichItWas) {
  auto s = start();
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 1.0}};
  std::set<std::string> texts;
  std::set<uint64_t> seeds;
  json first;
  for (int i = 0; i < 4; ++i) {
    const json j = json::parse(post(*s, "/v1/completions", body)->body);
    texts.insert(j["choices"][0]["text"].get<std::string>());
    seeds.insert(j["seed"].get<uint64_t>());
    if (i == 0) first = j;
  }
  EXPECT_EQ(seeds.size(), 4u);
  EXPECT_GE(texts.size(), 2u);
  // The seed it returned repeats the reply.
  json again = body;
  again["seed"] = first["seed"];
  const json j = json::parse(post(*s, "/v1/completions", again)->body);
  EXPECT_EQ(j["choices"][0]["text"], first["choices"][0]["text"]);
  EXPECT_EQ(j["seed"], first["seed"]);
}

TEST_F(ServerHostileTest, AnyContentTypeIsReadAsJson) {
  auto s = start();
  // 8.4 KB with curl's default content type (form-encoded).
  const std::string body = json{{"prompt", "Once"}, {"max_tokens", 2}, {"stop", json::array({std::string(8300, 'z')})}}.dump();
  const std::string r = post_raw(s->port(), "/v1/completions", body, "application/x-www-form-urlencoded");
  EXPECT_EQ(count_status_lines(r, "200"), 1) << r.substr(0, 400);
}

TEST_F(ServerHostileTest, ACompressingRequestReservesOnlyWhatItCanReach) {
  ServerOptions o;
  o.scheduler.kv_memory_bytes = 1 << 20;
  auto s = start(o);
  // kv_budget far above the pool: the request still only reaches prompt + max_tokens.
  const auto r = post(*s, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 8}, {"kv_policy", "triattention"},
                                              {"kv_budget", 1000000}, {"divide_length", 16}});
  EXPECT_EQ(r->status, 200) << r->body;
  // One that could reach more than the pool is told what to lower.
  const auto big = post(*s, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 100000}, {"kv_policy", "triattention"},
                                                {"kv_budget", 1000000}, {"divide_length", 16}});
  ASSERT_EQ(big->status, 400);
  EXPECT_NE(big->body.find("smaller budget"), std::string::npos) << big->body;
}

TEST_F(ServerHostileTest, EveryRefusalNamesTheFieldAtFault) {
  ServerOptions o;
  o.scheduler.parallel = 2;
  auto s = start(o);
  std::string longp;
  for (int i = 0; i < 600; ++i) longp += "a cat ";
  struct Bad {
    std::string path;
    json body;
    std::string param;
  };
  const std::vector<Bad> bad = {
      {"/v1/completions", {{"prompt", longp}}, "prompt"},
      {"/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", longp}}}}}, "messages"},
      {"/v1/completions", {{"prompt", "x"}, {"n", 3}}, "n"},
      {"/v1/completions", {{"prompt", "x"}, {"kv_policy", "triattention"}, {"kv_budget", 8}, {"sink", 8}}, "sink"},
      {"/v1/completions", {{"prompt", "x"}, {"kv_policy", "h3o"}}, "kv_policy"},
      {"/v1/completions", {{"prompt", "x"}, {"tools", json::array({{{"type", "function"}}})}}, "tools"},
      {"/v1/chat/completions",
       {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"response_format", {{"type", "json_object"}}}},
       "response_format"},
      {"/v1/completions", {{"prompt", "x"}, {"presence_penalty", 2.5}}, "presence_penalty"},
      {"/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"100000", 1}}}}, "logit_bias"},
      {"/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"store", true}}, "store"},
      {"/v1/completions", {{"prompt", "x"}, {"cache_prompt", true}}, "cache_prompt"},
  };
  for (const Bad& b : bad) {
    const auto r = post(*s, b.path, b.body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << b.body.dump().substr(0, 200) << " " << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], b.param) << r->body;
  }
}

TEST_F(ServerHostileTest, MethodsAndModelIds) {
  auto s = start();
  httplib::Client c("127.0.0.1", s->port());
  auto r = c.Get("/v1/models/tinystories-656k");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["id"], "tinystories-656k");
  r = c.Get("/v1/models/gpt-4");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "model");
  r = c.Get("/v1/completions");
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  r = c.Post("/health", "", "text/plain");
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET");
}

TEST_F(ServerHostileTest, AStreamBeginsWithTheRoleAndEndsWhenTheServerStops) {
  auto s = start();
  RawClient c(s->port());
  const std::string body = R"({"messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":100000,)"
                           R"("ignore_eos":true,"kv_policy":"triattention","kv_budget":32,"divide_length":16})";
  c.send("POST /v1/chat/completions HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  c.read_for("\"content\":\"", 10);  // the first piece of text
  c.read_until([](const std::string& got) { return std::count(got.begin(), got.end(), '\n') > 40; }, 10);
  // The first event is the role with null content, as llama-server sends it (no empty pieces).
  const std::string& got = c.received();
  const size_t first = got.find("data: ");
  ASSERT_NE(first, std::string::npos) << got;
  const json e = json::parse(got.substr(first + 6, got.find('\n', first) - first - 6));
  EXPECT_EQ(e["choices"][0]["delta"]["role"], "assistant");
  ASSERT_TRUE(e["choices"][0]["delta"].contains("content"));
  EXPECT_TRUE(e["choices"][0]["delta"]["content"].is_null());
  EXPECT_TRUE(e.contains("seed"));
  s->stop();  // what SIGINT does (SIGTERM drains first)
  const std::string& all = c.read_all(5);
  EXPECT_TRUE(c.eof());
  EXPECT_NE(all.find("the server is shutting down"), std::string::npos);
  EXPECT_NE(all.find("data: [DONE]\n\n\r\n0\r\n\r\n"), std::string::npos) << all.substr(all.size() - 300);
}

TEST_F(ServerHostileTest, HealthSaysBusyWhenTheQueueIsFullAndTokensAreCountedAsTheyCome) {
  ServerOptions o;
  o.scheduler.parallel = 1;
  o.scheduler.max_queued = 1;
  auto s = start(o);
  const std::string body = R"({"prompt":"Once","max_tokens":100000,"ignore_eos":true,"stream":true,)"
                           R"("kv_policy":"triattention","kv_budget":32,"divide_length":16})";
  RawClient running(s->port()), waiting(s->port());
  running.send("POST /v1/completions HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  running.read_for("\"text\"", 10);
  waiting.send("POST /v1/completions HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_TRUE(eventually([&] { return metric(*s, "triattn_sequences_queued") == 1; }));
  httplib::Client c("127.0.0.1", s->port());
  const auto h = c.Get("/health");
  EXPECT_EQ(h->status, 503);
  const json j = json::parse(h->body);
  EXPECT_EQ(j["status"], "busy");
  EXPECT_EQ(j["queued"], 1);
  // Generated tokens count while the stream runs, not only when it ends.
  const double a = metric(*s, "triattn_generated_tokens_total");
  ASSERT_TRUE(eventually([&] { return metric(*s, "triattn_generated_tokens_total") > a; }));
  EXPECT_GE(metric(*s, "triattn_http_connections"), 3);  // the two streams and this client
}

}  // namespace
}  // namespace triattn::server
