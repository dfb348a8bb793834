#include "server/server.h"

#include <chrono>
#include <iostream>
#include <thread>

#include "core/error.h"
#include "grammar/vocab_trie.h"
#include "server/api_error.h"
#include "server/chat_page.h"
#include "server/grammar_fields.h"
#include "server/http_reply.h"
#include "server/replica_info.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;

std::unique_ptr<http::Response> json_reply(int status, const json& body) {
  auto r = std::make_unique<http::Response>();
  r->status = status;
  r->body = json_text(body);
  return r;
}

http::Reply now(std::unique_ptr<http::Response> r) {
  http::Reply reply;
  reply.response = std::move(r);
  return reply;
}

http::ServerOptions http_options(const ServerOptions& o) {
  http::ServerOptions h;
  h.host = o.host;
  h.port = o.port;
  h.listen_fd = o.listen_fd;
  h.limits.max_body_bytes = o.max_body_bytes;
  h.workers = o.http_threads;
  h.max_connections = o.max_connections;
  h.request_timeout_s = o.read_timeout_s;
  h.idle_timeout_s = o.idle_timeout_s;
  h.write_timeout_s = o.write_timeout_s;
  h.body_limit_hint = "raise it with --max-body";
  return h;
}

// The endpoints and the methods each takes; a known path asked with another method gets 405.
struct Route {
  const char* path;
  const char* method;
};
constexpr Route kRoutes[] = {{"/", "GET"},
                             {"/health", "GET"},
                             {"/metrics", "GET"},
                             {"/v1/models", "GET"},
                             {"/v1/completions", "POST"},
                             {"/v1/chat/completions", "POST"},
                             {"/v1/responses", "POST"},
                             {"/v1/messages", "POST"},
                             {"/v1/messages/count_tokens", "POST"},
                             {"/apply-template", "POST"}};

}  // namespace

Server::Server(std::shared_ptr<const Model> model, const ServerOptions& options)
    : model_(std::move(model)),
      options_(options),
      chat_prompt_(model_->tokenizer(), model_->path(), options.chat, &std::cerr),
      pool_(options.threads),
      forward_(*model_, &pool_),
      scheduler_(*model_, forward_, options.scheduler),
      http_(http_options(options), [this](http::Request& req, const http::Wake& wake) { return route(req, wake); }) {
  // The vocabulary trie every constrained request walks: built once, here.
  if (!options_.defaults.vocab)
    options_.defaults.vocab =
        std::make_shared<const grammar::VocabTrie>(grammar::VocabTrie::from_tokenizer(
            model_->tokenizer(), static_cast<size_t>(model_->config().vocab_size)));
  if (!options_.defaults.grammars) options_.defaults.grammars = std::make_shared<GrammarCache>();
}

Server::~Server() { stop(); }

http::Reply Server::route(http::Request& req, const http::Wake& wake) {
  const std::string& path = req.path;
  const bool api = path.rfind("/v1/", 0) == 0 || path == "/apply-template";
  if (api && !options_.api_key.empty()) {
    const std::string* auth = req.header("Authorization");
    const std::string* anthropic_key = req.header("x-api-key");  // how Anthropic's clients send it
    if ((!auth || *auth != "Bearer " + options_.api_key) && (!anthropic_key || *anthropic_key != options_.api_key)) {
      metrics_.request(401);
      return now(json_reply(401, ApiError(401, "missing or wrong API key (send Authorization: Bearer KEY, or x-api-key: KEY)").body()));
    }
  }
  if (path.size() > 14 && path.rfind("/v1/responses/", 0) == 0) return handle_stored_response(req);
  // GET /v1/models/{id}: the one model, under its name.
  const std::string models = "/v1/models/";
  const bool model_path = path.size() > models.size() && path.rfind(models, 0) == 0;
  const char* method = model_path ? "GET" : nullptr;
  for (const Route& r : kRoutes)
    if (path == r.path) method = r.method;
  if (!method) {
    metrics_.request(404);
    return now(json_reply(404, ApiError(404, "no such endpoint: " + path).body()));
  }
  if (req.method != method) {
    metrics_.request(405);
    auto r = json_reply(405, ApiError(405, path + " takes " + method + ", not " + req.method).body());
    r->headers.push_back({"Allow", method});
    return now(std::move(r));
  }
  const json model_card = {{"id", model_->config().name}, {"object", "model"}, {"created", 0}, {"owned_by", "triattn"}};
  if (path == "/") {
    auto r = std::make_unique<http::Response>();
    r->content_type = "text/html; charset=utf-8";
    r->body = std::string(chat_page_html());
    return now(std::move(r));
  }
  if (path == "/health") return now(health());
  if (path == "/metrics") {
    auto r = std::make_unique<http::Response>();
    r->content_type = "text/plain; version=0.0.4";
    r->body = replica_info_metric(options_.replica_name) + metrics_.render(scheduler_, http_.connections());
    return now(std::move(r));
  }
  if (path == "/v1/models") return now(json_reply(200, {{"object", "list"}, {"data", json::array({model_card})}}));
  if (model_path) {
    if (path.substr(models.size()) != model_->config().name) {
      metrics_.request(404);
      return now(json_reply(404, ApiError(404, "no model '" + path.substr(models.size()) + "' here; this server has '" +
                                                   model_->config().name + "'",
                                          "model")
                                     .body()));
    }
    return now(json_reply(200, model_card));
  }
  if (path == "/apply-template") return handle_apply_template(req);
  if (path == "/v1/responses") return handle_responses(req, wake);
  if (path.rfind("/v1/messages", 0) == 0) return handle_messages(req, wake, path == "/v1/messages/count_tokens");
  return handle_completion(req, wake, path == "/v1/chat/completions");
}

std::unique_ptr<http::Response> Server::health() const {
  const int queued = scheduler_.queued(), running = scheduler_.running();
  // "busy": the queue is full and a completion now would get 503; a load balancer may send
  // it elsewhere. "draining": finishing what it has before exit, taking nothing new.
  // "stopping": cancelling what runs.
  const bool full = queued >= options_.scheduler.max_queued;
  const char* status = stopping_ ? "stopping" : draining_ ? "draining" : full ? "busy" : "ok";
  return json_reply(stopping_ || draining_ || full ? 503 : 200, {{"status", status},
                                                   {"running", running},
                                                   {"queued", queued},
                                                   {"parallel", options_.scheduler.parallel},
                                                   {"max_queue", options_.scheduler.max_queued}});
}

void Server::inference_loop() {
  while (!stopping_) {
    if (scheduler_.running() + scheduler_.queued() == 0) {
      std::unique_lock<std::mutex> lock(work_mu_);
      work_cv_.wait_for(lock, std::chrono::milliseconds(50));
      continue;
    }
    try {
      scheduler_.step();
    } catch (const std::exception& e) {
      std::cerr << "serve: engine step failed: " << e.what() << "\n";
    }
  }
}

void Server::bind() {
  http_.bind();
  if (options_.replica_name.empty()) options_.replica_name = host_name() + ":" + std::to_string(port());
}

void Server::start() {
  bind();
  inference_ = std::thread([this] { inference_loop(); });
  listener_ = std::thread([this] { http_.run(); });
}

void Server::run() {
  bind();
  inference_ = std::thread([this] { inference_loop(); });
  http_.run();
  stop();
}

void Server::drain(double timeout_s) {
  draining_ = true;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  // Idle once the scheduler has nothing and every reply is out to its last byte (a finished
  // generation may still have its tail to send).
  while (!stop_asked_ && std::chrono::steady_clock::now() < end &&
         scheduler_.running() + scheduler_.queued() + http_.busy() > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop();
}

void Server::stop() {
  stop_asked_ = true;
  // The HTTP loop first: it ends the replies in flight (their generations are cancelled),
  // then the inference thread.
  http_.stop();
  std::lock_guard<std::mutex> lock(join_mu_);  // stop() may run on a signal thread and in run()
  if (listener_.joinable()) listener_.join();
  if (!stopping_.exchange(true)) work_cv_.notify_all();
  if (inference_.joinable()) inference_.join();
}

}  // namespace triattn::server
