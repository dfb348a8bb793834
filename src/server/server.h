#pragma once
// triattn serve: an OpenAI-compatible HTTP server over the engine's scheduler. The HTTP layer
// (server/http) reads, writes and times out connections on one event loop; a few worker threads
// parse and queue requests; one inference thread owns the scheduler and runs its steps
// (docs/design.md, Architecture; llama-server's shape). Every request carries its own KV
// settings.
//
//   POST /v1/completions, POST /v1/chat/completions (streaming as SSE, or not)
//   POST /v1/responses, GET|DELETE /v1/responses/{id} (OpenAI's Responses API)
//   POST /v1/messages, POST /v1/messages/count_tokens (Anthropic's Messages API)
//   GET  /v1/models, GET /v1/models/{id}, GET /health, GET /metrics (Prometheus text), GET /
// (docs/serving.md: running replicas behind a load balancer, and draining them)
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
#include "server/http/http_server.h"
#include "server/metrics.h"
#include "server/responses_store.h"

namespace triattn::server {

class ReplyFormat;  // server/api_reply.h

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                // 0: any free port (see port())
  int listen_fd = -1;             // a listening socket to serve instead (http/listen_socket.h)
  // The triattn_replica_info{name=...} label of /metrics, telling replicas behind one load
  // balancer apart (empty: hostname:port).
  std::string replica_name;
  std::string api_key;            // non-empty: /v1/* need "Authorization: Bearer KEY" (or x-api-key: KEY)
  size_t max_body_bytes = 1 << 20;
  int http_threads = 4;           // threads that parse and queue requests
  int max_connections = 1024;     // open at once; past it new connections get 503
  double read_timeout_s = 30;     // a request must arrive whole within this (else 408)
  double idle_timeout_s = 60;     // a kept-alive connection with nothing in flight is closed
  double write_timeout_s = 60;    // a client that reads nothing of its reply this long is dropped
  // From arrival to the last token: a request still queued then gets 504, one still running
  // ends there with finish_reason "length" (0 = no deadline).
  double request_timeout_s = 0;
  int threads = 0;                // inference threads (0 = all cores)
  SchedulerOptions scheduler;
  RequestDefaults defaults;
  ChatPromptOptions chat;
  // Chat replies: "<think>…</think>" returned as reasoning_content (false: kept in content,
  // --reasoning-format none).
  bool split_reasoning = true;
  // Responses kept for GET /v1/responses/{id} and previous_response_id (store: true), oldest
  // forgotten first; their KV caches are the scheduler's kept sequences (reuse_slots).
  size_t stored_responses = 1024;
};

struct Exchange;

class Server {
 public:
  Server(std::shared_ptr<const Model> model, const ServerOptions& options);
  ~Server();

  // Binds (Error naming the address when it cannot), then serves until stop(). Blocks.
  void run();
  // Binds and serves on background threads; returns once it accepts connections.
  void start();
  // Stops admitting, ends what runs (streams with their closing event), returns when the
  // threads are done. Safe from any thread, repeatable.
  void stop();
  // Graceful stop, for a replica behind a load balancer: /health answers 503 "draining" and
  // new completions 503 with Retry-After at once, while what runs and what is queued go on
  // until every reply is out, or until timeout_s (then stop() cancels the rest). Returns
  // once stopped; a stop() from another thread meanwhile ends the wait.
  void drain(double timeout_s);
  bool draining() const { return draining_; }
  int port() const { return http_.port(); }

 private:
  void inference_loop();
  void bind();  // the listener, and the replica's default name (which needs the port)
  http::Reply route(http::Request& req, const http::Wake& wake);
  // POST /v1/completions and /v1/chat/completions (server/completion_handler.cpp).
  http::Reply handle_completion(http::Request& req, const http::Wake& wake, bool chat);
  // POST /apply-template (llama-server's): the prompt a chat completion with this body would
  // feed, {"prompt": TEXT}; nothing is generated (server/completion_handler.cpp).
  http::Reply handle_apply_template(http::Request& req);
  // POST /v1/responses, GET and DELETE /v1/responses/{id} (server/responses_handler.cpp).
  http::Reply handle_responses(http::Request& req, const http::Wake& wake);
  http::Reply handle_stored_response(const http::Request& req);
  // POST /v1/messages and /v1/messages/count_tokens (server/messages_handler.cpp).
  http::Reply handle_messages(http::Request& req, const http::Wake& wake, bool count_only);
  // A parsed request queued on the scheduler, with the exchange its reply reads; every
  // generating endpoint's path. Throws ApiError (400 naming the field, 503 when the queue is
  // full). stream_logprobs: the callbacks keep each token's log-probabilities for the stream.
  struct Queued {
    uint64_t id = 0;
    std::shared_ptr<Exchange> ex;
  };
  Queued queue_generation(const CompletionRequest& parsed, const http::Wake& wake, bool chat, bool stream_logprobs);
  // The reply of a queued Responses or Messages request, whole or streamed, in `format`.
  http::Reply api_reply_of(const Queued& q, std::unique_ptr<ReplyFormat> format, const CompletionRequest& parsed);
  std::unique_ptr<http::Response> health() const;

  std::shared_ptr<const Model> model_;
  ServerOptions options_;
  ChatPrompt chat_prompt_;
  ThreadPool pool_;
  Forward forward_;
  Scheduler scheduler_;
  ServerMetrics metrics_;
  ResponseStore responses_{options_.stored_responses};
  http::Server http_;

  std::mutex work_mu_;
  std::condition_variable work_cv_;  // a request was queued, or stop
  std::atomic<bool> stopping_{false};
  std::atomic<bool> draining_{false};
  std::atomic<bool> stop_asked_{false};  // stop() was called (drain() stops waiting)
  std::mutex join_mu_;
  std::thread inference_, listener_;
};

}  // namespace triattn::server
