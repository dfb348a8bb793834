#pragma once
// triattn serve: an OpenAI-compatible HTTP server over the engine's scheduler. HTTP threads
// only parse, queue and stream; one inference thread owns the scheduler and runs its steps
// (DESIGN §2, llama-server's shape). Every request carries its own KV settings.
//
//   POST /v1/completions, POST /v1/chat/completions (streaming as SSE, or not)
//   GET  /v1/models, GET /health, GET /metrics (Prometheus text)
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "chat/chat_prompt.h"
#include "core/thread_pool.h"
#include "engine/scheduler.h"
#include "model/forward.h"
#include "server/completion_request.h"
#include "server/metrics.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace triattn::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                // 0: any free port (see port())
  std::string api_key;            // non-empty: /v1/* need "Authorization: Bearer KEY"
  size_t max_body_bytes = 1 << 20;
  // HTTP threads; 0 = parallel + max_queued + 4. Every streaming or waiting request holds one,
  // so fewer than that starve /metrics and /health while the server is full.
  int http_threads = 0;
  int threads = 0;                // inference threads (0 = all cores)
  SchedulerOptions scheduler;
  RequestDefaults defaults;
  ChatPromptOptions chat;
  // Chat replies: "<think>…</think>" returned as reasoning_content (false: kept in content,
  // --reasoning-format none).
  bool split_reasoning = true;
};



class Server {
 public:
  Server(std::shared_ptr<const Model> model, const ServerOptions& options);
  ~Server();

  // Binds (Error naming the address when it cannot), then serves until stop(). Blocks.
  void run();
  // Binds and serves on background threads; returns once it accepts connections.
  void start();
  // Stops admitting, cancels what runs, returns when the threads are done. Safe from any
  // thread, repeatable.
  void stop();
  int port() const { return port_; }

 private:
  void bind();
  void inference_loop();
  void routes();
  // POST /v1/completions and /v1/chat/completions (server/completion_handler.cpp).
  void handle_completion(const httplib::Request& req, httplib::Response& res, bool chat);

  std::shared_ptr<const Model> model_;
  ServerOptions options_;
  ChatPrompt chat_prompt_;
  ThreadPool pool_;
  Forward forward_;
  Scheduler scheduler_;
  std::unique_ptr<httplib::Server> http_;
  ServerMetrics metrics_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket, recorded when httplib creates it

  std::mutex work_mu_;
  std::condition_variable work_cv_;  // a request was queued, or stop
  std::atomic<bool> stopping_{false};
  std::mutex join_mu_;
  std::thread inference_, listener_;
};

}  // namespace triattn::server
