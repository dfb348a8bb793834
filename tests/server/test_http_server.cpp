// The HTTP layer alone, with handlers written for the test, driven by raw sockets the way
// hostile or careless clients behave: pipelining, keep-alive, slow senders, idle sockets, too
// many connections, oversized and chunked bodies, clients that leave while their reply is
// pending or streaming, a server stopped mid-stream, and a second server on a taken port.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "raw_client.h"
#include "server/http/http_server.h"

namespace triattn::http {
namespace {

using triattn::test::count_status_lines;
using triattn::test::RawClient;
using triattn::test::eventually;
using namespace std::chrono_literals;

// What the test handlers' replies saw: stop() calls by reason.
struct Seen {
  std::atomic<int> client_gone{0}, server_stopping{0}, pulls{0};
};

// A stream of `n` pieces, one per wake-up the test triggers through `wakes`.
class CountingStream : public BodyStream {
 public:
  CountingStream(std::shared_ptr<Seen> seen, int n, std::string piece) : seen_(seen), n_(n), piece_(std::move(piece)) {}
  bool pull(std::string& out) override {
    ++seen_->pulls;
    if (stopping_) {
      out += "bye\n";
      return false;
    }
    out += piece_;
    return ++sent_ < n_;
  }
  void stop(Stop why) override {
    (why == Stop::ClientGone ? seen_->client_gone : seen_->server_stopping)++;
    stopping_ = why == Stop::ServerStopping;
  }

 private:
  std::shared_ptr<Seen> seen_;
  int n_, sent_ = 0;
  std::string piece_;
  bool stopping_ = false;
};

// A reply that is ready when the test says so.
class GatedReply : public PendingReply {
 public:
  GatedReply(std::shared_ptr<Seen> seen, std::shared_ptr<std::atomic<bool>> open) : seen_(seen), open_(open) {}
  std::unique_ptr<Response> poll() override {
    if (!open_->load() && !stopping_) return nullptr;
    auto r = std::make_unique<Response>();
    r->status = stopping_ ? 503 : 200;
    r->body = stopping_ ? "stopping" : "done";
    return r;
  }
  void stop(BodyStream::Stop why) override {
    (why == BodyStream::Stop::ClientGone ? seen_->client_gone : seen_->server_stopping)++;
    stopping_ = why == BodyStream::Stop::ServerStopping;
  }

 private:
  std::shared_ptr<Seen> seen_;
  std::shared_ptr<std::atomic<bool>> open_;
  bool stopping_ = false;
};

class HttpServerTest : public ::testing::Test {
 protected:
  // /echo answers the body; /wait a GatedReply; /stream a CountingStream woken every 20 ms
  // (endless unless /stream?n=K); /big 4 MiB.
  void start(ServerOptions o = {}) {
    o.port = 0;
    server_ = std::make_unique<Server>(o, [this](Request& req, const Wake& wake) {
      Reply reply;
      if (req.path == "/wait") {
        reply.pending = std::make_shared<GatedReply>(seen_, gate_);
        waker_ = wake;
        return reply;
      }
      if (req.path == "/stream") {
        reply.response = std::make_unique<Response>();
        reply.response->content_type = "text/plain";
        const int n = req.target.find("n=") != std::string::npos ? std::stoi(req.target.substr(req.target.find("n=") + 2))
                                                                 : 1 << 30;
        reply.response->stream = std::make_shared<CountingStream>(seen_, n, std::string(stream_piece_, 'x') + "\n");
        std::lock_guard<std::mutex> lock(wakes_mu_);
        stream_wakes_.push_back(wake);
        return reply;
      }
      reply.response = std::make_unique<Response>();
      reply.response->content_type = "text/plain";
      reply.response->body = req.path == "/big" ? std::string(4 << 20, 'b') : req.method + " " + req.path + " " + req.body;
      return reply;
    });
    server_->bind();
    thread_ = std::thread([this] { server_->run(); });
    waker_thread_ = std::thread([this] {
      while (!done_) {
        std::this_thread::sleep_for(20ms);
        std::lock_guard<std::mutex> lock(wakes_mu_);
        for (const Wake& w : stream_wakes_) w();
      }
    });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    done_ = true;
    if (waker_thread_.joinable()) waker_thread_.join();
  }
  int port() const { return server_->port(); }

  std::shared_ptr<Seen> seen_ = std::make_shared<Seen>();
  std::shared_ptr<std::atomic<bool>> gate_ = std::make_shared<std::atomic<bool>>(false);
  Wake waker_;
  size_t stream_piece_ = 10;
  std::mutex wakes_mu_;
  std::vector<Wake> stream_wakes_;
  std::atomic<bool> done_{false};
  std::unique_ptr<Server> server_;
  std::thread thread_, waker_thread_;
};

// Waits up to 5 s for `cond`.
TEST_F(HttpServerTest, KeepAliveAndPipelinedRequestsAreAllAnswered) {
  start();
  RawClient c(port());
  ASSERT_TRUE(c.connected());
  // Three requests in one write, the last one closing the connection.
  ASSERT_TRUE(c.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                     "POST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
                     "GET /c HTTP/1.1\r\nConnection: close\r\n\r\n"));
  const std::string& r = c.read_all(5);
  EXPECT_TRUE(c.eof());
  EXPECT_EQ(count_status_lines(r, "200"), 3) << r;
  const size_t a = r.find("GET /a"), b = r.find("POST /b abc"), cc = r.find("GET /c");
  EXPECT_TRUE(a < b && b < cc && cc != std::string::npos) << r;
  EXPECT_NE(r.find("Connection: close"), std::string::npos);
}

TEST_F(HttpServerTest, ASlowSenderGets408AndDoesNotHoldUpOthers) {
  ServerOptions o;
  o.request_timeout_s = 0.5;
  start(o);
  RawClient slow(port());
  ASSERT_TRUE(slow.send("POST /echo HTTP/1.1\r\n"));
  // Others are answered at once while the slow one trickles in a header line at a time.
  for (int i = 0; i < 3; ++i) {
    RawClient c(port());
    c.send("GET /ok HTTP/1.1\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(count_status_lines(c.read_all(2), "200"), 1);
    slow.send("X-Slow: " + std::to_string(i) + "\r\n");
    std::this_thread::sleep_for(100ms);
  }
  const std::string& r = slow.read_all(3);
  EXPECT_EQ(count_status_lines(r, "408"), 1) << r;
  EXPECT_TRUE(slow.eof());
}

TEST_F(HttpServerTest, IdleAndSilentConnectionsCostNoThread) {
  ServerOptions o;
  o.workers = 1;
  start(o);
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 100; ++i) {
    idle.push_back(std::make_unique<RawClient>(port()));
    idle.back()->send("GET /x HTTP/1.1\r\n");  // half a head, never finished
  }
  RawClient c(port());
  c.send("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(count_status_lines(c.read_all(2), "200"), 1) << c.received();
  EXPECT_GE(server_->connections(), 100);
}

TEST_F(HttpServerTest, ConnectionsPastTheCapGet503) {
  ServerOptions o;
  o.max_connections = 4;
  start(o);
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawClient>(port()));
    held.back()->send("GET /a HTTP/1.1\r\n\r\n");
    held.back()->read_for("\r\n\r\n", 2);  // accepted and answered: open
  }
  RawClient extra(port());
  const std::string& r = extra.read_all(2);
  EXPECT_EQ(count_status_lines(r, "503"), 1) << r;
  held.clear();
  ASSERT_TRUE(eventually([&] { return server_->connections() == 0; }));
  RawClient again(port());
  again.send("GET /b HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(count_status_lines(again.read_all(2), "200"), 1);
}

TEST_F(HttpServerTest, OversizedBodiesGet413BeforeTheyAreSent) {
  ServerOptions o;
  o.limits.max_body_bytes = 1024;
  o.body_limit_hint = "raise it with --max-body";
  start(o);
  {
    RawClient c(port());
    c.send("POST /echo HTTP/1.1\r\nContent-Length: 134217728\r\n\r\n");
    const std::string& r = c.read_all(2);
    EXPECT_EQ(count_status_lines(r, "413"), 1) << r;
    EXPECT_NE(r.find("--max-body"), std::string::npos) << r;
  }
  {
    // 128 MiB announced in one chunk: refused at its size line, the data never read.
    RawClient c(port());
    c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n8000000\r\n");
    const std::string& r = c.read_all(2);
    EXPECT_EQ(count_status_lines(r, "413"), 1) << r;
  }
  {
    // Many small chunks: refused at the one that passes the limit.
    RawClient c(port());
    c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 200 && c.send("10\r\n0123456789abcdef\r\n"); ++i) {
    }
    EXPECT_EQ(count_status_lines(c.read_all(2), "413"), 1) << c.received();
  }
}

TEST_F(HttpServerTest, ExpectContinueGetsItsInterimResponse) {
  start();
  RawClient c(port());
  c.send("POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
  EXPECT_EQ(count_status_lines(c.read_for("\r\n\r\n", 2), "100"), 1) << c.received();
  c.send("body");
  EXPECT_NE(c.read_for("POST /echo body", 2).find("200 OK"), std::string::npos) << c.received();
}

TEST_F(HttpServerTest, AClientThatLeavesStopsItsPendingReply) {
  start();
  {
    RawClient c(port());
    c.send("GET /wait HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(eventually([&] { return static_cast<bool>(waker_); }));
  }  // closed before the reply is ready
  EXPECT_TRUE(eventually([&] { return seen_->client_gone.load() == 1; }));
  // A client that stays gets the reply once it is ready.
  RawClient c(port());
  c.send("GET /wait HTTP/1.1\r\n\r\n");
  std::this_thread::sleep_for(100ms);
  gate_->store(true);
  waker_();
  EXPECT_NE(c.read_for("done", 2).find("200 OK"), std::string::npos) << c.received();
  EXPECT_EQ(seen_->client_gone.load(), 1);
}

// busy() (what a drain waits for): a request counts from its arrival until the last byte of
// its reply is out; a connection that asks nothing does not.
TEST_F(HttpServerTest, BusyCountsRequestsUntilTheirReplyIsOut) {
  start();
  RawClient idle(port());
  ASSERT_TRUE(idle.connected());
  RawClient c(port());
  c.send("GET /wait HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return static_cast<bool>(waker_); }));
  EXPECT_TRUE(eventually([&] { return server_->busy() == 1; }));
  gate_->store(true);
  waker_();
  EXPECT_NE(c.read_for("done", 2).find("200 OK"), std::string::npos) << c.received();
  EXPECT_TRUE(eventually([&] { return server_->busy() == 0; }));  // kept alive, nothing asked
  RawClient s(port());
  s.send("GET /stream?n=20 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(eventually([&] { return server_->busy() == 1; }));
  EXPECT_NE(s.read_for("0\r\n\r\n", 5).find("200 OK"), std::string::npos) << s.received();
  EXPECT_TRUE(eventually([&] { return server_->busy() == 0; }));
}

TEST_F(HttpServerTest, StreamsAreChunkedAndStopWhenTheClientLeaves) {
  start();
  {
    RawClient c(port());
    c.send("GET /stream?n=3 HTTP/1.1\r\n\r\n");
    const std::string& r = c.read_for("0\r\n\r\n", 3);
    EXPECT_NE(r.find("Transfer-Encoding: chunked"), std::string::npos) << r;
    EXPECT_NE(r.find("b\r\nxxxxxxxxxx\n\r\n"), std::string::npos) << r;  // 11 bytes a chunk
    EXPECT_EQ(seen_->client_gone.load(), 0);
  }
  RawClient c(port());
  c.send("GET /stream HTTP/1.1\r\n\r\n");
  c.read_for("xxxx", 2);
  c.close();
  EXPECT_TRUE(eventually([&] { return seen_->client_gone.load() == 1; }));
  // An HTTP/1.0 client gets the stream unchunked, ended by the close.
  RawClient old(port());
  old.send("GET /stream?n=2 HTTP/1.0\r\n\r\n");
  const std::string& r = old.read_all(3);
  EXPECT_TRUE(old.eof());
  EXPECT_EQ(r.find("Transfer-Encoding"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\n\r\nxxxxxxxxxx\nxxxxxxxxxx\n"), std::string::npos) << r;
}

TEST_F(HttpServerTest, AClientThatDoesNotReadIsDropped) {
  ServerOptions o;
  o.write_timeout_s = 0.5;
  stream_piece_ = 1 << 18;
  start(o);
  RawClient c(port());
  c.send("GET /stream HTTP/1.1\r\n\r\n");  // and never reads
  EXPECT_TRUE(eventually([&] { return seen_->client_gone.load() == 1; }));
}

TEST_F(HttpServerTest, StopEndsStreamsProperlyAndDoesNotWaitForIdleSockets) {
  start();
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 20; ++i) {
    idle.push_back(std::make_unique<RawClient>(port()));
    idle.back()->send("GET / HTTP/1.1\r\nX: ");
  }
  RawClient streaming(port());
  streaming.send("GET /stream HTTP/1.1\r\n\r\n");
  streaming.read_for("xxxx", 2);
  RawClient waiting(port());
  waiting.send("GET /wait HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return static_cast<bool>(waker_); }));
  const auto t0 = std::chrono::steady_clock::now();
  server_->stop();
  thread_.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
  // The stream got its closing piece and the chunked terminator; the pending reply a 503.
  const std::string& s = streaming.read_all(2);
  EXPECT_NE(s.find("bye\n\r\n0\r\n\r\n"), std::string::npos) << s.substr(s.size() > 200 ? s.size() - 200 : 0);
  EXPECT_EQ(count_status_lines(waiting.read_all(2), "503"), 1) << waiting.received();
  EXPECT_EQ(seen_->server_stopping.load(), 2);
  for (auto& c : idle) {
    c->read_all(2);
    EXPECT_TRUE(c->eof());
  }
}

TEST_F(HttpServerTest, ASecondServerOnATakenPortFails) {
  start();
  ServerOptions o;
  o.port = port();
  Server second(o, [](Request&, const Wake&) { return Reply{}; });
  try {
    second.bind();
    FAIL() << "bound a port already in use";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already in use"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(port())), std::string::npos) << e.what();
  }
}

TEST_F(HttpServerTest, AHandlerThatThrowsGives500AndTheServerGoesOn) {
  ServerOptions o;
  o.port = 0;
  server_ = std::make_unique<Server>(o, [](Request& req, const Wake&) -> Reply {
    if (req.path == "/boom") throw std::runtime_error("kaput");
    Reply r;
    r.response = std::make_unique<Response>();
    return r;
  });
  server_->bind();
  thread_ = std::thread([this] { server_->run(); });
  RawClient c(port());
  c.send("GET /boom HTTP/1.1\r\n\r\nGET /fine HTTP/1.1\r\nConnection: close\r\n\r\n");
  const std::string& r = c.read_all(2);
  EXPECT_EQ(count_status_lines(r, "500"), 1) << r;
  EXPECT_NE(r.find("kaput"), std::string::npos);
  EXPECT_EQ(count_status_lines(r, "200"), 1) << r;
}

}  // namespace
}  // namespace triattn::http
