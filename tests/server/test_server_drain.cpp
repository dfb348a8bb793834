// Readiness and graceful drain, what a load balancer in front of replicas relies on: /health
// says "loading" before the model is in (the port answering from the start, its socket then
// served by the real server), "draining" once a drain begins; a draining server refuses new
// completions with 503 and Retry-After, finishes what runs and what is queued, then stops; a
// drain past its timeout cancels the rest. And /metrics names the replica.
#include <thread>

#include "server/http/listen_socket.h"
#include "server/loading_server.h"
#include "server/replica_info.h"
#include "server/raw_client.h"
#include "server/server_test_fixture.h"

namespace triattn::server::test {
namespace {

using triattn::test::RawClient;

// A long generation (to max_tokens, past end-of-text) whose KV stays small (TriAttention,
// budget 32), so that it may run past the model's context: it takes a while, which the drain
// must wait out.
json drain_long_body(int64_t max_tokens, bool stream) {
  return {{"prompt", "Once upon a time,"}, {"max_tokens", max_tokens}, {"ignore_eos", true}, {"stream", stream},
          {"stream_options", {{"include_usage", true}}},        {"kv_policy", "triattention"},
          {"kv_budget", 32},  {"divide_length", 16},           {"window", 8}};
}

// Posts on its own thread; the reply is read once done.
struct DrainCall {
  DrainCall(int port, json body) {
    thread = std::thread([this, port, body = std::move(body)] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(120, 0);
      auto r = c.Post("/v1/completions", body.dump(), "application/json");
      if (r) {
        status = r->status;
        reply = r->body;
      }
    });
  }
  void join() { thread.join(); }
  std::thread thread;
  int status = 0;
  std::string reply;
};

json drain_health(int port, int* status) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/health");
  *status = r ? r->status : 0;
  return r ? json::parse(r->body) : json();
}

}  // namespace

TEST_F(ServerTest, HealthSaysLoadingUntilTheServerTakesTheSocketOver) {
  const int fd = http::listen_socket("127.0.0.1", 0);
  const int port = http::socket_port(fd);
  auto loading = std::make_unique<LoadingServer>(fd);
  int status = 0;
  EXPECT_EQ(drain_health(port, &status)["status"], "loading");
  EXPECT_EQ(status, 503);
  {
    httplib::Client c("127.0.0.1", port);
    auto r = c.Post("/v1/completions", R"({"prompt": "x"})", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    EXPECT_EQ(r->get_header_value("Retry-After"), "1");
    EXPECT_NE(r->body.find("loading"), std::string::npos) << r->body;
  }
  loading->stop();
  // Between the two servers a connection waits in the socket's backlog, never refused.
  RawClient waiting(port);
  ASSERT_TRUE(waiting.connected());
  ASSERT_TRUE(waiting.send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  ServerOptions o;
  o.listen_fd = fd;
  auto s = start(o);
  EXPECT_EQ(s->port(), port);
  EXPECT_EQ(triattn::test::response_statuses(waiting.read_all()), std::vector<std::string>{"200"}) << waiting.received();
  EXPECT_EQ(drain_health(port, &status)["status"], "ok");
  EXPECT_EQ(status, 200);
}

TEST_F(ServerTest, ADrainFinishesWhatRunsAndIsQueuedAndRefusesNewWork) {
  ServerOptions o;
  o.scheduler.parallel = 1;  // the second request waits in the queue
  auto s = start(o);
  const int port = s->port();
  DrainCall running(port, drain_long_body(500, true)), queued(port, drain_long_body(500, false));
  int status = 0;
  ASSERT_TRUE(triattn::test::eventually([&] {
    const json h = drain_health(port, &status);
    return h["running"] == 1 && h["queued"] == 1;
  }));
  std::thread drainer([&] { s->drain(60); });
  ASSERT_TRUE(triattn::test::eventually([&] { return s->draining(); }));
  const json h = drain_health(port, &status);
  EXPECT_EQ(status, 503);
  EXPECT_EQ(h["status"], "draining");
  {
    httplib::Client c("127.0.0.1", port);
    auto r = c.Post("/v1/completions", json{{"prompt", "The dog"}, {"max_tokens", 4}}.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    EXPECT_EQ(r->get_header_value("Retry-After"), "1");
    EXPECT_NE(r->body.find("draining"), std::string::npos) << r->body;
  }
  drainer.join();  // returns once both are out
  running.join();
  queued.join();
  EXPECT_EQ(running.status, 200);
  EXPECT_EQ(queued.status, 200);
  const auto ev = events(running.reply);  // the usage chunk, then [DONE]
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_EQ(ev[ev.size() - 2]["usage"]["completion_tokens"], 500) << running.reply.substr(0, 300);
  EXPECT_EQ(json::parse(queued.reply)["usage"]["completion_tokens"], 500) << queued.reply.substr(0, 300);
  EXPECT_FALSE(httplib::Client("127.0.0.1", port).Get("/health")) << "stopped after the drain";
}

TEST_F(ServerTest, ADrainPastItsTimeoutCancelsWhatIsLeft) {
  auto s = start();
  const int port = s->port();
  DrainCall endless(port, drain_long_body(100000, true));
  int status = 0;
  ASSERT_TRUE(triattn::test::eventually([&] { return drain_health(port, &status)["running"] == 1; }));
  const auto t0 = std::chrono::steady_clock::now();
  s->drain(0.3);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 5);
  endless.join();
  // The stream was cut by the stop: it ends with the error event saying so.
  EXPECT_EQ(endless.status, 200);
  EXPECT_NE(endless.reply.find("the server is shutting down"), std::string::npos)
      << endless.reply.substr(endless.reply.size() > 300 ? endless.reply.size() - 300 : 0);
}

TEST_F(ServerTest, MetricsNameTheReplica) {
  ServerOptions o;
  o.replica_name = "eu-1 \"b\"";
  auto s = start(o);
  httplib::Client c("127.0.0.1", s->port());
  const std::string m = c.Get("/metrics")->body;
  EXPECT_NE(m.find("# TYPE triattn_replica_info gauge\ntriattn_replica_info{name=\"eu-1 \\\"b\\\"\"} 1\n"),
            std::string::npos)
      << m.substr(0, 400);
  auto d = start();  // unnamed: hostname:port
  const std::string dm = httplib::Client("127.0.0.1", d->port()).Get("/metrics")->body;
  EXPECT_NE(dm.find(host_name() + ":" + std::to_string(d->port()) + "\"} 1\n"), std::string::npos) << dm.substr(0, 400);
}

}  // namespace triattn::server::test
