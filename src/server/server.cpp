#include "server/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <map>

#include "core/error.h"
#include "server/api_error.h"
#include "server/chat_page.h"
#include "server/reasoning_split.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr int kListenBacklog = 1024;

// What one request's HTTP handler and the inference thread share. The scheduler's callbacks
// (inference thread) append text and set the result; the handler waits and sends.
struct Exchange {
  std::mutex mu;
  std::condition_variable cv;
  std::string text;  // produced, not yet sent
  bool done = false;
  GenerateResult result;
  std::atomic<bool> gone{false};            // the client went away: stop generating
  std::shared_ptr<PolicyFactory> policies;  // the request's KV settings, alive until done
};

json error_json(const std::string& message) { return ApiError(500, message).body(); }

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

std::string finish_reason(const GenerateResult& r) { return r.finish_reason == "stop" ? "stop" : "length"; }

json usage_json(const GenerateResult& r, const std::string& policy) {
  const int64_t completion = static_cast<int64_t>(r.tokens.size());
  return {{"prompt_tokens", r.stats.prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", r.stats.prompt_tokens + completion},
          {"kv_policy", policy},
          {"kv_peak_tokens", r.stats.kv_peak_tokens},
          {"kv_peak_bytes", r.stats.kv_peak_bytes},
          {"prune_events", r.stats.prune_events},
          {"scoring_ms", r.stats.scoring_ms}};
}

std::string sse(const json& j) { return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n"; }

}  // namespace

// Prometheus counters; gauges are read from the scheduler when scraped.
struct Server::Counters {
  std::mutex mu;
  std::map<int, int64_t> requests_by_status;
  int64_t prompt_tokens = 0, generated_tokens = 0, prune_events = 0;
  double scoring_seconds = 0;
  void request(int status) {
    std::lock_guard<std::mutex> lock(mu);
    ++requests_by_status[status];
  }
  void finished(const GenerateResult& r) {
    std::lock_guard<std::mutex> lock(mu);
    prompt_tokens += r.stats.prompt_tokens;
    generated_tokens += static_cast<int64_t>(r.tokens.size());
    prune_events += r.stats.prune_events;
    scoring_seconds += r.stats.scoring_ms / 1000.0;
  }
};

Server::Server(std::shared_ptr<const Model> model, const ServerOptions& options)
    : model_(std::move(model)),
      options_(options),
      chat_prompt_(model_->tokenizer(), model_->path(), options.chat, &std::cerr),
      pool_(options.threads),
      forward_(*model_, &pool_),
      scheduler_(*model_, forward_, options.scheduler),
      http_(std::make_unique<httplib::Server>()),
      counters_(std::make_unique<Counters>()) {
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
    counters_->request(401);
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
    std::string m;
    {
      std::lock_guard<std::mutex> lock(counters_->mu);
      m += "# TYPE triattn_requests_total counter\n";
      for (const auto& [status, n] : counters_->requests_by_status)
        m += "triattn_requests_total{status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
      m += "# TYPE triattn_prompt_tokens_total counter\ntriattn_prompt_tokens_total " +
           std::to_string(counters_->prompt_tokens) + "\n";
      m += "# TYPE triattn_generated_tokens_total counter\ntriattn_generated_tokens_total " +
           std::to_string(counters_->generated_tokens) + "\n";
      m += "# TYPE triattn_prune_events_total counter\ntriattn_prune_events_total " +
           std::to_string(counters_->prune_events) + "\n";
      m += "# TYPE triattn_scoring_seconds_total counter\ntriattn_scoring_seconds_total " +
           std::to_string(counters_->scoring_seconds) + "\n";
    }
    m += "# TYPE triattn_sequences_running gauge\ntriattn_sequences_running " + std::to_string(scheduler_.running()) + "\n";
    m += "# TYPE triattn_sequences_queued gauge\ntriattn_sequences_queued " + std::to_string(scheduler_.queued()) + "\n";
    m += "# TYPE triattn_kv_reserved_bytes gauge\ntriattn_kv_reserved_bytes " +
         std::to_string(scheduler_.kv_reserved_bytes()) + "\n";
    m += "# TYPE triattn_kv_held_bytes gauge\ntriattn_kv_held_bytes " + std::to_string(scheduler_.kv_bytes_in_use()) + "\n";
    m += "# TYPE triattn_kv_pool_bytes gauge\ntriattn_kv_pool_bytes " +
         std::to_string(options_.scheduler.kv_memory_bytes) + "\n";
    res.set_content(m, "text/plain; version=0.0.4");
  });

  auto completion = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res) {
      CompletionRequest parsed;
      auto ex = std::make_shared<Exchange>();
      uint64_t id = 0;
      try {
        if (stopping_) throw ApiError(503, "the server is shutting down");
        json body;
        try {
          body = json::parse(req.body);
        } catch (const json::exception& e) {
          throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
        }
        parsed = parse_completion_request(body, chat, *model_, chat_prompt_, options_.defaults);
        try {
          ex->policies = std::make_shared<PolicyFactory>(*model_, parsed.kv);
        } catch (const Error& e) {
          throw ApiError(400, e.what(), "kv_policy");
        }
        Request r;
        r.prompt = parsed.prompt;
        r.options = parsed.options;
        r.sampling = parsed.sampling;
        r.policies = ex->policies.get();
        r.on_text = [ex](const std::string& t) {
          {
            std::lock_guard<std::mutex> lock(ex->mu);
            ex->text += t;
          }
          ex->cv.notify_all();
          return !ex->gone.load();
        };
        r.on_done = [ex, this](const GenerateResult& g) {
          counters_->finished(g);
          {
            std::lock_guard<std::mutex> lock(ex->mu);
            ex->result = g;
            ex->done = true;
          }
          ex->cv.notify_all();
        };
        SubmitResult s;
        try {
          s = scheduler_.submit(std::move(r));
        } catch (const Error& e) {
          throw ApiError(400, e.what());
        }
        if (s.status == SubmitResult::Status::TooLarge) throw ApiError(400, s.reason, "max_tokens");
        if (s.status == SubmitResult::Status::QueueFull) {
          res.set_header("Retry-After", "1");
          throw ApiError(503, s.reason);
        }
        id = s.id;
        work_cv_.notify_all();
      } catch (const ApiError& e) {
        counters_->request(e.status);
        send_json(res, e.status, e.body());
        return;
      }

      const std::string rid = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(id);
      const int64_t created = static_cast<int64_t>(std::time(nullptr));
      const std::string model_name = model_->config().name, policy = parsed.kv.policy;
      // A streamed choice: completions carry text; chat deltas the answer and, apart, the
      // reasoning.
      auto choice = [chat](const ReasoningSplit::Out& text, const json& finish, bool first) {
        if (!chat) return json{{"index", 0}, {"text", text.content}, {"logprobs", nullptr}, {"finish_reason", finish}};
        json delta = json::object();
        if (first) delta["role"] = "assistant";
        if (!text.reasoning.empty()) delta["reasoning_content"] = text.reasoning;
        if (!text.content.empty() || text.reasoning.empty()) delta["content"] = text.content;
        return json{{"index", 0}, {"delta", delta}, {"finish_reason", finish}};
      };
      const bool split = chat && options_.split_reasoning;
      const bool opens = ReasoningSplit::prompt_opens_reasoning(parsed.prompt_text);
      auto chunk = [=](json choices) {
        return json{{"id", rid}, {"object", chat ? "chat.completion.chunk" : "text_completion"}, {"created", created},
                    {"model", model_name}, {"choices", std::move(choices)}};
      };

      if (!parsed.stream) {
        std::unique_lock<std::mutex> lock(ex->mu);
        while (!ex->done && !stopping_) ex->cv.wait_for(lock, std::chrono::milliseconds(100));
        if (!ex->done) {
          scheduler_.cancel(id);
          counters_->request(503);
          send_json(res, 503, ApiError(503, "the server is shutting down").body());
          return;
        }
        const GenerateResult& g = ex->result;
        if (g.finish_reason == "error") {
          counters_->request(500);
          send_json(res, 500, error_json(g.error));
          return;
        }
        json c = json{{"index", 0}, {"text", g.text}, {"logprobs", nullptr}, {"finish_reason", finish_reason(g)}};
        if (chat) {
          ReasoningSplit rs(split, opens);
          ReasoningSplit::Out a = rs.push(g.text), b = rs.flush();
          json message = {{"role", "assistant"}, {"content", a.content + b.content}};
          if (!(a.reasoning + b.reasoning).empty()) message["reasoning_content"] = a.reasoning + b.reasoning;
          c = json{{"index", 0}, {"message", message}, {"finish_reason", finish_reason(g)}};
        }
        json out = {{"id", rid},
                    {"object", chat ? "chat.completion" : "text_completion"},
                    {"created", created},
                    {"model", model_name},
                    {"choices", json::array({c})},
                    {"usage", usage_json(g, policy)}};
        counters_->request(200);
        send_json(res, 200, out);
        return;
      }

      counters_->request(200);
      auto first = std::make_shared<bool>(true);
      auto splitter = std::make_shared<ReasoningSplit>(split, opens);
      const bool include_usage = parsed.include_usage;
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream",
          [this, ex, id, first, splitter, chunk, choice, include_usage, policy](size_t, httplib::DataSink& sink) {
            std::string text;
            bool done = false;
            GenerateResult g;
            {
              std::unique_lock<std::mutex> lock(ex->mu);
              ex->cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return ex->done || !ex->text.empty(); });
              text.swap(ex->text);
              done = ex->done;
              if (done) g = ex->result;
            }
            auto write = [&](const std::string& s) {
              if (ex->gone) return false;
              if (!sink.is_writable() || !sink.write(s.data(), s.size())) {
                ex->gone = true;  // the client went away: the generation stops at the next token
                scheduler_.cancel(id);
                return false;
              }
              return true;
            };
            ReasoningSplit::Out out = splitter->push(text);
            if (done) {
              const ReasoningSplit::Out rest = splitter->flush();
              out.reasoning += rest.reasoning;
              out.content += rest.content;
            }
            if (!out.reasoning.empty() || !out.content.empty()) {
              if (!write(sse(chunk(json::array({choice(out, nullptr, *first)}))))) return false;
              *first = false;
            }
            if (stopping_ && !done) {
              scheduler_.cancel(id);
              write(sse(error_json("the server is shutting down")));
              sink.done();
              return true;
            }
            if (!done) {  // called again after the wait; a closed socket ends the generation
              if (sink.is_writable()) return true;
              ex->gone = true;
              scheduler_.cancel(id);
              return false;
            }
            if (g.finish_reason == "error") {
              write(sse(error_json(g.error)));
            } else {
              if (!write(sse(chunk(json::array({choice({}, finish_reason(g), *first)}))))) return false;
              if (include_usage) {
                json u = chunk(json::array());
                u["usage"] = usage_json(g, policy);
                if (!write(sse(u))) return false;
              }
            }
            write("data: [DONE]\n\n");
            sink.done();
            return true;
          },
          [this, ex, id](bool) {
            // The response is over (sent, or the connection dropped): a generation still
            // running is for nobody.
            std::lock_guard<std::mutex> lock(ex->mu);
            if (!ex->done) {
              ex->gone = true;
              scheduler_.cancel(id);
            }
          });
    };
  };
  h.Post("/v1/completions", completion(false));
  h.Post("/v1/chat/completions", completion(true));
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
