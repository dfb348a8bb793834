#include "server/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <iostream>

#include "core/error.h"
#include "server/api_error.h"
#include "server/chat_page.h"
#include "server/http_reply.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;
constexpr int kListenBacklog = 1024;

}  // namespace

Server::Server(std::shared_ptr<const Model> model, const ServerOptions& options)
    : model_(std::move(model)),
      options_(options),
      chat_prompt_(model_->tokenizer(), model_->path(), options.chat, &std::cerr),
      pool_(options.threads),
      forward_(*model_, &pool_),
      scheduler_(*model_, forward_, options.scheduler),
      http_(std::make_unique<httplib::Server>()) {
  routes();
}

Server::~Server() { stop(); }

void Server::routes() {
  httplib::Server& h = *http_;
  const int http_threads = options_.http_threads > 0
                               ? options_.http_threads
                               : options_.scheduler.parallel + options_.scheduler.max_queued + 4;
  h.new_task_queue = [n = http_threads] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
  h.set_payload_max_length(options_.max_body_bytes);
  // cpp-httplib listens with a backlog of 5 (compiled into Debian's library): 16 clients
  // connecting at once overflowed it and a dropped handshake now and then reached a client as a
  // reset connection. Its socket is recorded here and given a deep backlog in bind().
  h.set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd_ = static_cast<int>(sock);
  });
  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (options_.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + options_.api_key)
      return httplib::Server::HandlerResponse::Unhandled;
    metrics_.request(401);
    send_json(res, 401, ApiError(401, "missing or wrong API key (send Authorization: Bearer KEY)").body());
    return httplib::Server::HandlerResponse::Handled;
  });
  h.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string what = res.status == 413 ? "the request body is larger than the server's limit (--max-body)"
                             : res.status == 404 ? "no such endpoint"
                                                 : "request failed";
    send_json(res, res.status, ApiError(res.status, what).body());
  });

  h.Get("/", [](const httplib::Request&, httplib::Response& res) {
    const std::string_view page = chat_page_html();
    res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
  });
  h.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"status", stopping_ ? "stopping" : "ok"}});
  });
  h.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200,
              {{"object", "list"},
               {"data", json::array({{{"id", model_->config().name}, {"object", "model"}, {"created", 0},
                                      {"owned_by", "triattn"}}})}});
  });
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(scheduler_), "text/plain; version=0.0.4");
  });

  h.Post("/v1/completions",
         [this](const httplib::Request& req, httplib::Response& res) { handle_completion(req, res, false); });
  h.Post("/v1/chat/completions",
         [this](const httplib::Request& req, httplib::Response& res) { handle_completion(req, res, true); });
}

void Server::bind() {
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ <= 0) fail("serve: cannot listen on ", options_.host, " (any port)");
  } else {
    if (!http_->bind_to_port(options_.host, options_.port))
      fail("serve: cannot listen on ", options_.host, ":", options_.port, " (in use, or not an address of this machine)");
    port_ = options_.port;
  }
  // Listening again on a listening socket only changes its backlog (Linux, BSD).
  if (listen_fd_ >= 0) ::listen(listen_fd_, kListenBacklog);
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

void Server::start() {
  bind();
  inference_ = std::thread([this] { inference_loop(); });
  listener_ = std::thread([this] { http_->listen_after_bind(); });
  while (!http_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

void Server::run() {
  bind();
  inference_ = std::thread([this] { inference_loop(); });
  http_->listen_after_bind();
  stop();
}

void Server::stop() {
  if (!stopping_.exchange(true)) {
    work_cv_.notify_all();
    http_->stop();
  }
  std::lock_guard<std::mutex> lock(join_mu_);  // stop() may run on a signal thread and in run()
  if (listener_.joinable()) listener_.join();
  if (inference_.joinable()) inference_.join();
}

}  // namespace triattn::server
