// triattn serve end to end over HTTP (cpp-httplib's client): completions and chat, streamed
// and not, equal to the engine run alone; stop strings; per-request KV settings with their
// figures in usage; OpenAI-style errors (400, 401, 404, 413, 503); many clients at once; a
// client that disconnects mid-stream frees its sequence.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include "server_test_fixture.h"

namespace triattn::server {
namespace {

using json = nlohmann::json;
using ServerTest = test::ServerTest;
using test::kModel;

TEST_F(ServerTest, CompletionEqualsTheEngineAlone) {
  auto s = start();
  const auto r = post(*s, "/v1/completions", {{"prompt", "Once upon a time,"}, {"max_tokens", 30}, {"temperature", 0}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], alone(ids("Once upon a time,"), 30));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(j["usage"]["completion_tokens"], 30);
  EXPECT_EQ(j["usage"]["total_tokens"], 37);
  EXPECT_EQ(j["usage"]["kv_policy"], "full");
}

TEST_F(ServerTest, StreamedChunksAddUpToTheSameText) {
  auto s = start();
  const json body = {{"prompt", "Once upon a time,"}, {"max_tokens", 30}, {"temperature", 0}, {"stream", true},
                     {"stream_options", {{"include_usage", true}}}};
  const auto r = post(*s, "/v1/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  const auto ev = events(r->body);
  ASSERT_GE(ev.size(), 3u);
  std::string text;
  for (size_t i = 0; i + 2 < ev.size(); ++i) text += ev[i]["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, alone(ids("Once upon a time,"), 30));
  EXPECT_EQ(ev[ev.size() - 3]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(ev[ev.size() - 2]["usage"]["completion_tokens"], 30);
  EXPECT_TRUE(ev[ev.size() - 2]["choices"].empty());
  EXPECT_EQ(ev.back(), "[DONE]");
}

TEST_F(ServerTest, ChatUsesTheTemplateAndStreamsDeltas) {
  auto s = start();
  const json msgs = json::array({{{"role", "user"}, {"content", "Tell me a story"}}});
  const auto plain = post(*s, "/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 20}, {"temperature", 0}});
  ASSERT_EQ(plain->status, 200) << plain->body;
  const json j = json::parse(plain->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  const ChatPrompt cp(model_->tokenizer(), kModel, {}, nullptr);
  nlohmann::ordered_json m = nlohmann::ordered_json::array({chat_message("user", "Tell me a story")});
  const std::vector<int32_t> prompt = cp.tokenize(cp.render(m, true));
  EXPECT_EQ(j["choices"][0]["message"]["content"], alone(prompt, 20));
  EXPECT_EQ(j["usage"]["prompt_tokens"], static_cast<int64_t>(prompt.size()));

  const auto streamed =
      post(*s, "/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 20}, {"temperature", 0}, {"stream", true}});
  const auto ev = events(streamed->body);
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(ev[0]["choices"][0]["delta"]["content"].is_null());  // no empty pieces
  std::string text;
  for (size_t i = 1; i + 1 < ev.size(); ++i) {
    const json& delta = ev[i]["choices"][0]["delta"];
    if (!delta.contains("content")) continue;
    ASSERT_TRUE(delta["content"].is_string()) << ev[i];
    EXPECT_FALSE(delta["content"].get<std::string>().empty()) << ev[i];
    text += delta["content"].get<std::string>();
  }
  EXPECT_EQ(text, j["choices"][0]["message"]["content"]);
}

TEST_F(ServerTest, StopStringsEndTheTextInBothModes) {
  auto s = start();
  const std::string full = alone(ids("Once upon a time,"), 40);
  const std::string stop = full.substr(30, 5);
  const std::string expect = full.substr(0, full.find(stop));
  for (bool stream : {false, true}) {
    const auto r = post(*s, "/v1/completions",
                        {{"prompt", "Once upon a time,"}, {"max_tokens", 40}, {"temperature", 0}, {"stream", stream},
                         {"stop", json::array({"zzzz", stop})}});
    ASSERT_EQ(r->status, 200);
    std::string text, finish;
    if (stream) {
      for (const json& e : events(r->body))
        if (e.is_object()) {
          text += e["choices"][0]["text"].get<std::string>();
          if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
        }
    } else {
      const json j = json::parse(r->body);
      text = j["choices"][0]["text"];
      finish = j["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(text, expect) << "stream " << stream;
    EXPECT_EQ(finish, "stop");
  }
}

TEST_F(ServerTest, PerRequestCompressionAndItsFiguresInUsage) {
  auto s = start();
  const auto r = post(*s, "/v1/completions",
                      {{"prompt", "Once upon a time,"}, {"max_tokens", 120}, {"temperature", 0},
                       {"kv_policy", "triattention"}, {"kv_budget", 32}, {"divide_length", 16}, {"window", 8}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json u = json::parse(r->body)["usage"];
  EXPECT_EQ(u["kv_policy"], "triattention");
  EXPECT_LE(u["kv_peak_tokens"].get<int64_t>(), 48);
  EXPECT_GT(u["prune_events"].get<int64_t>(), 0);
}

// "stats": "auto": the request's sequences measure their own statistics (on a server without
// any), each choice of n = 2 continuing the shared prefill's; the text is the engine's alone
// under --stats auto. Anything but "auto", or auto for a policy that cannot use it, is refused.
TEST_F(ServerTest, StatsAutoIsARequestField) {
  ServerOptions o;
  o.port = 0;
  o.threads = 2;
  auto s = std::make_unique<Server>(model_, o);  // no statistics
  s->start();
  const json kv = {{"kv_policy", "triattention"}, {"kv_budget", 32}, {"divide_length", 16}, {"window", 8}};
  json body = {{"prompt", "Once upon a time,"}, {"max_tokens", 120}, {"temperature", 0}, {"n", 2}};
  body.update(kv);
  EXPECT_EQ(post(*s, "/v1/completions", body)->status, 400) << "triattention without statistics";
  body["stats"] = "auto";
  const auto r = post(*s, "/v1/completions", body);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_GT(j["usage"]["prune_events"].get<int64_t>(), 0);

  KvSettings settings;
  settings.policy = "triattention";
  settings.stats_path = std::string(kStatsAuto);
  settings.params.budget = 32, settings.params.divide_length = 16, settings.params.window = 8;
  const std::string alone_auto = alone(ids("Once upon a time,"), 120, settings);
  for (int c = 0; c < 2; ++c) EXPECT_EQ(j["choices"][c]["text"], alone_auto) << "choice " << c;

  for (const json& bad : {json{{"stats", "/etc/passwd"}}, json{{"stats", true}},
                          json{{"stats", "auto"}, {"kv_policy", "snapkv"}},
                          json{{"stats", "auto"}, {"kv_policy", "triattention-split"}}}) {
    json b = {{"prompt", "x"}, {"kv_policy", "triattention"}};
    b.update(bad);
    const auto e = post(*s, "/v1/completions", b);
    EXPECT_EQ(e->status, 400) << b.dump();
    EXPECT_EQ(json::parse(e->body)["error"]["param"], "stats") << e->body;
  }
  // Its knob is a request field too, and needs auto.
  json knob = {{"prompt", "x"}, {"kv_policy", "triattention"}, {"auto_stats_min", PolicyParams{}.auto_stats_min + 1}};
  o.defaults.kv.params.stats = stats_;
  auto with_file = std::make_unique<Server>(model_, o);
  with_file->start();
  const auto e = post(*with_file, "/v1/completions", knob);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(json::parse(e->body)["error"]["param"], "auto_stats_min") << e->body;
}

TEST_F(ServerTest, BadRequestsGetOpenAiErrors) {
  ServerOptions o;
  o.api_key = "sekret";
  o.max_body_bytes = 4096;
  auto s = start(o);
  struct Bad {
    json body;
    std::string param;
  };
  const std::vector<Bad> bad = {
      {{{"prompt", "x"}, {"top_p", 3}}, "top_p"},
      {{{"prompt", "x"}, {"temperature", "hot"}}, "temperature"},
      {{{"prompt", "x"}, {"max_tokens", -1}}, "max_tokens"},
      {{{"prompt", "x"}, {"max_tokens", 1.5}}, "max_tokens"},
      {{{"prompt", "x"}, {"stop", 5}}, "stop"},
      {{{"prompt", "x"}, {"n", 0}}, "n"},
      {{{"prompt", "x"}, {"n", 17}}, "n"},
      {{{"prompt", "x"}, {"logprobs", 21}}, "logprobs"},
      {{{"prompt", "x"}, {"logprobs", true}}, "logprobs"},
      {{{"prompt", "x"}, {"echo", true}, {"logprobs", 1}, {"stream", true}}, "echo"},
      {{{"prompt", "x"}, {"kv_budget", 0}}, "kv_budget"},
      {{{"prompt", "x"}, {"pruning_mode", "sideways"}}, "pruning_mode"},
      // The policies' own knobs are request fields too, named after their flags.
      {{{"prompt", "x"}, {"kv_policy", "snapkv"}, {"obs_window", 0}}, "obs_window"},
      {{{"prompt", "x"}, {"kv_policy", "snapkv"}, {"pool_kernel", 4}}, "pool_kernel"},
      {{{"prompt", "x"}, {"kv_policy", "rkv"}, {"rkv_lambda", 1.5}}, "rkv_lambda"},
      {{{"prompt", 7}}, "prompt"},
      {json::object(), "prompt"},
  };
  for (const Bad& b : bad) {
    const auto r = post(*s, "/v1/completions", b.body, "sekret");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << b.body.dump();
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_EQ(e["param"], b.param) << e.dump();
  }
  // A prompt past the context (512) under full attention.
  std::string longp;
  for (int i = 0; i < 600; ++i) longp += "a cat ";  // ~1200 tokens in a 3.6 KB body
  auto r = post(*s, "/v1/completions", {{"prompt", longp}}, "sekret");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("context"), std::string::npos) << r->body;
  // Not JSON, no key, a wrong key, too large, no such path.
  httplib::Client c("127.0.0.1", s->port());
  r = c.Post("/v1/completions", httplib::Headers{{"Authorization", "Bearer sekret"}}, "{not json", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(post(*s, "/v1/completions", {{"prompt", "x"}})->status, 401);
  EXPECT_EQ(post(*s, "/v1/completions", {{"prompt", "x"}}, "wrong")->status, 401);
  EXPECT_EQ(c.Get("/health")->status, 200);  // needs no key
  r = post(*s, "/v1/completions", {{"prompt", std::string(8000, 'a')}}, "sekret");
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("--max-body"), std::string::npos) << r->body;
  EXPECT_EQ(c.Get("/v1/nothing", httplib::Headers{{"Authorization", "Bearer sekret"}})->status, 404);
}

TEST_F(ServerTest, AFullQueueAnswers503WithRetryAfter) {
  ServerOptions o;
  o.scheduler.max_queued = 0;
  auto s = start(o);
  const auto r = post(*s, "/v1/completions", {{"prompt", "x"}});
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
}

// 16 clients x 8 requests at once, 4 running: no 5xx, every greedy reply (completion or chat,
// streamed or not) is the one served alone.
TEST_F(ServerTest, ConcurrentClientsGetTheirOwnReplies) {
  auto s = start();
  const std::vector<std::string> prompts = {"Once upon a time,", "The dog", "Lily and Tom", "A big red ball"};
  std::vector<std::string> expect, expect_chat;
  const ChatPrompt cp(model_->tokenizer(), kModel, {}, nullptr);
  for (const auto& p : prompts) {
    expect.push_back(alone(ids(p), 25));
    nlohmann::ordered_json m = nlohmann::ordered_json::array({chat_message("user", p)});
    expect_chat.push_back(alone(cp.tokenize(cp.render(m, true)), 25));
  }
  std::atomic<int> wrong{0}, errors{0};
  std::mutex first_error_mu;
  std::string first_error;
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c)
    clients.emplace_back([&, c] {
      for (int k = 0; k < 8; ++k) {
        const size_t i = static_cast<size_t>(c + k) % prompts.size();
        // Every other request of the non-streaming clients is a chat (templates render on the
        // HTTP threads at once).
        const bool chat = c % 2 == 0 && k % 2 == 1;
        const auto r = chat ? post(*s, "/v1/chat/completions",
                                   {{"messages", json::array({{{"role", "user"}, {"content", prompts[i]}}})},
                                    {"max_tokens", 25}, {"temperature", 0}})
                            : post(*s, "/v1/completions",
                                   {{"prompt", prompts[i]}, {"max_tokens", 25}, {"temperature", 0},
                                    {"stream", (c % 2) == 1}});
        if (!r || r->status != 200) {
          if (errors++ == 0) {
            std::lock_guard<std::mutex> lock(first_error_mu);
            first_error = r ? std::to_string(r->status) + " " + r->body : "no response: " + httplib::to_string(r.error());
          }
          continue;
        }
        std::string text;
        if (c % 2 == 1) {
          for (const json& e : events(r->body))
            if (e.is_object()) text += e["choices"][0]["text"].get<std::string>();
        } else if (chat) {
          text = json::parse(r->body)["choices"][0]["message"]["content"];
        } else {
          text = json::parse(r->body)["choices"][0]["text"];
        }
        if (text != (chat ? expect_chat[i] : expect[i])) ++wrong;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(errors.load(), 0) << first_error;
  EXPECT_EQ(wrong.load(), 0);
}

// A client that goes away mid-stream: its sequence is cancelled and freed (the metrics show
// nothing running) while another request completes.
TEST_F(ServerTest, ADisconnectedStreamFreesItsSequence) {
  auto s = start();
  httplib::Client c("127.0.0.1", s->port());
  const json body = {{"prompt", "Once upon a time,"}, {"max_tokens", 100000}, {"temperature", 0}, {"stream", true},
                     {"kv_policy", "triattention"}, {"kv_budget", 32}, {"divide_length", 16}, {"window", 8}};
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
  c.send(req);  // returns once the receiver said stop: the connection is closed
  EXPECT_GE(chunks, 3);
  const auto other = post(*s, "/v1/completions", {{"prompt", "The dog"}, {"max_tokens", 10}, {"temperature", 0}});
  EXPECT_EQ(other->status, 200);
  std::string metrics;
  for (int i = 0; i < 100; ++i) {
    metrics = c.Get("/metrics")->body;
    if (metrics.find("triattn_sequences_running 0\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(metrics.find("triattn_sequences_running 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("triattn_kv_reserved_bytes 0\n"), std::string::npos) << metrics;
}

// /metrics carries the process's resident memory and its peak, as Prometheus names them
// (bench-serve reports the peak), read from /proc/self/status.
TEST_F(ServerTest, MetricsGiveTheProcessMemory) {
  auto s = start();
  const double rss = test::metric(*s, "process_resident_memory_bytes");
  const double peak = test::metric(*s, "process_resident_memory_max_bytes");
  EXPECT_GT(rss, 1 << 20) << "the model alone is more than a MiB";
  EXPECT_GE(peak, rss);
}

// A template whose generation prompt opens <think> (as DeepSeek-R1's does): the reply is
// reasoning until </think>, returned as reasoning_content, streamed and not; with
// split_reasoning off it stays in content.
TEST_F(ServerTest, ReasoningComesApartFromTheAnswer) {
  const std::string dir = ::testing::TempDir();
  const std::string tpl = dir + "/think.jinja";
  {
    std::ofstream f(tpl);
    f << "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
         "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";
  }
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"max_tokens", 12},
                     {"temperature", 0}};
  std::string reasoning;
  {
    ServerOptions o;
    o.chat.template_path = tpl;
    auto s = start(o);
    const json j = json::parse(post(*s, "/v1/chat/completions", body)->body);
    reasoning = j["choices"][0]["message"]["reasoning_content"];
    EXPECT_FALSE(reasoning.empty());
    EXPECT_EQ(j["choices"][0]["message"]["content"], "");  // the model never closes </think>
    json sb = body;
    sb["stream"] = true;
    std::string streamed;
    for (const json& e : events(post(*s, "/v1/chat/completions", sb)->body))
      if (e.is_object() && e["choices"][0]["delta"].contains("reasoning_content"))
        streamed += e["choices"][0]["delta"]["reasoning_content"].get<std::string>();
    EXPECT_EQ(streamed, reasoning);
  }
  ServerOptions none;
  none.chat.template_path = tpl;
  none.split_reasoning = false;
  auto s = start(none);
  const json j = json::parse(post(*s, "/v1/chat/completions", body)->body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], reasoning);
  EXPECT_FALSE(j["choices"][0]["message"].contains("reasoning_content"));
}

// chat_template_kwargs reach the template as variables (Qwen3's enable_thinking).
TEST_F(ServerTest, ChatTemplateKwargsAreTemplateVariables) {
  const std::string tpl = ::testing::TempDir() + "/kwargs.jinja";
  {
    std::ofstream f(tpl);
    f << "{% for m in messages %}{{ m['content'] }}{% endfor %}"
         "{% if enable_thinking is defined and not enable_thinking %} without thinking{% endif %}";
  }
  ServerOptions o;
  o.chat.template_path = tpl;
  auto s = start(o);
  const json msgs = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});
  const json plain = json::parse(post(*s, "/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 1}})->body);
  const json off = json::parse(post(*s, "/v1/chat/completions",
                                    {{"messages", msgs}, {"max_tokens", 1},
                                     {"chat_template_kwargs", {{"enable_thinking", false}}}})
                                   ->body);
  EXPECT_EQ(plain["usage"]["prompt_tokens"], static_cast<int64_t>(ids("Once upon a time").size()));
  EXPECT_EQ(off["usage"]["prompt_tokens"], static_cast<int64_t>(ids("Once upon a time without thinking").size()));
  EXPECT_EQ(post(*s, "/v1/chat/completions", {{"messages", msgs}, {"chat_template_kwargs", 3}})->status, 400);
}

TEST_F(ServerTest, ModelsAndHealth) {
  auto s = start();
  httplib::Client c("127.0.0.1", s->port());
  const json m = json::parse(c.Get("/v1/models")->body);
  EXPECT_EQ(m["data"][0]["id"], "tinystories-656k");
  EXPECT_EQ(json::parse(c.Get("/health")->body)["status"], "ok");
  s->stop();
  s->stop();  // repeatable
}

}  // namespace
}  // namespace triattn::server
