// triattn serve: the OpenAI-compatible server (server/server.h). Flags set the server's
// defaults; each request may override the KV settings in its body. The port answers from the
// start: 503 "loading" until the model is in. SIGTERM drains (what runs and what is queued
// finish, within --drain-timeout) and exits 0; SIGINT, or a second signal, stops at once
// (docs/serving.md).
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <iostream>
#include <limits>
#include <thread>

#include "calib/stats_embedded.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/prompt.h"
#include "core/error.h"
#include "server/http/listen_socket.h"
#include "server/loading_server.h"
#include "server/server.h"

namespace triattn::cli {

int cmd_serve(const std::vector<std::string>& args) {
  CLI::App app{"Serve the model over an OpenAI-compatible HTTP API", "triattn serve"};
  std::string model_path;
  server::ServerOptions o;
  int64_t kv_memory_mib = 0, max_body_kib = 1024;
  o.defaults.max_tokens_limit = 65536;
  KvOptions kv;
  kv.per_request = true;  // the flags are the requests' defaults
  std::string reasoning_format = "split";
  app.add_option("-m,--model", model_path, "model: .gguf file, HF directory or llama2.c .bin")->required();
  app.add_option("--host", o.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o.port, "port to listen on (0 = any free port, printed)")->capture_default_str();
  auto* api_key = app.add_option("--api-key", o.api_key, "require 'Authorization: Bearer KEY' on /v1/*");
  app.add_option("--parallel", o.scheduler.parallel, "most sequences running at once")->capture_default_str();
  app.add_option("--kv-memory", kv_memory_mib, "KV pool in MiB that running sequences reserve from (0 = no limit)")
      ->capture_default_str();
  app.add_option("--max-batched-tokens", o.scheduler.max_batched_tokens, "tokens per engine step")->capture_default_str();
  app.add_option("--max-queue", o.scheduler.max_queued, "requests waiting for admission before 503")
      ->capture_default_str();
  app.add_option("--max-body", max_body_kib, "largest request body in KiB (larger: 413)")->capture_default_str();
  app.add_option("-n,--n-predict", o.defaults.max_tokens, "max_tokens when a request names none")->capture_default_str();
  app.add_option("--max-tokens-limit", o.defaults.max_tokens_limit,
                 "most tokens one request may generate (a larger max_tokens gets 400; 0 = no limit)")
      ->capture_default_str();
  app.add_option("--request-timeout", o.request_timeout_s,
                 "seconds from a request's arrival to its end: one still queued then gets 504, one running ends "
                 "with finish_reason length (0 = none)")
      ->capture_default_str();
  app.add_option("--http-threads", o.http_threads, "threads parsing and queueing requests (the connections "
                                                   "themselves are served by one event loop)")
      ->capture_default_str();
  app.add_option("--max-connections", o.max_connections, "open connections at most; past it a new one gets 503")
      ->capture_default_str();
  app.add_option("--read-timeout", o.read_timeout_s, "seconds a client may take to send a whole request (else 408)")
      ->capture_default_str();
  app.add_option("--idle-timeout", o.idle_timeout_s, "seconds a kept-alive connection may wait between requests")
      ->capture_default_str();
  app.add_option("--write-timeout", o.write_timeout_s,
                 "seconds a client may read nothing of its reply before it is dropped (its generation stops)")
      ->capture_default_str();
  int reuse_slots = -1;
  app.add_option("--reuse-slots", reuse_slots,
                 "finished conversations kept so the next turn continues their KV cache instead of prefilling "
                 "again (-1 = --parallel, 0 = none); they give their pool room back to waiting requests")
      ->capture_default_str();
  app.add_option("--reasoning-format", reasoning_format,
                 "chat replies: split (<think>...</think> as reasoning_content) or none (kept in content)")
      ->capture_default_str();
  double drain_timeout_s = 30;
  app.add_option("--drain-timeout", drain_timeout_s,
                 "SIGTERM: seconds the requests running and queued have to finish before they are cancelled "
                 "(meanwhile /health and new completions get 503; 0 = stop at once, as SIGINT does)")
      ->capture_default_str();
  auto* replica_name = app.add_option("--replica-name", o.replica_name,
                                      "this replica's name in /metrics (triattn_replica_info{name=...}); default "
                                      "hostname:port");
  // The sampling flags are the defaults of requests that leave a field out (as llama-server's).
  add_sampling_options(app, o.defaults.sampling, "seed of requests that name none (default: a fresh one each)");
  add_chat_template_options(app, o.chat);
  add_threads_option(app, o.threads);
  add_kv_options(app, kv);
  if (int rc = parse(app, args); rc >= 0) return rc;
  finish_kv_options(app, kv);
  if (o.port < 0 || o.port > 65535) fail("--port must be between 0 and 65535");
  if (o.scheduler.parallel < 1 || o.scheduler.parallel > 4096) fail("--parallel must be between 1 and 4096");
  if (o.scheduler.max_batched_tokens < 1) fail("--max-batched-tokens must be at least 1");
  if (o.scheduler.max_queued < 0) fail("--max-queue must not be negative");
  if (kv_memory_mib < 0 || kv_memory_mib > (int64_t{1} << 30)) fail("--kv-memory must be between 0 and 2^30 MiB");
  if (max_body_kib < 1 || max_body_kib > (int64_t{1} << 20)) fail("--max-body must be between 1 and 2^20 KiB");
  if (o.http_threads < 1 || o.http_threads > 256) fail("--http-threads must be between 1 and 256");
  if (o.max_connections < 1 || o.max_connections > 1000000) fail("--max-connections must be between 1 and 1000000");
  for (const auto& [name, v] : {std::pair{"--read-timeout", o.read_timeout_s}, std::pair{"--idle-timeout", o.idle_timeout_s},
                                std::pair{"--write-timeout", o.write_timeout_s}})
    if (!(v > 0 && v <= 86400)) fail(name, " must be more than 0 and at most 86400 seconds");
  if (!(o.request_timeout_s >= 0 && o.request_timeout_s <= 31 * 86400))
    fail("--request-timeout must be between 0 (none) and 2678400 seconds");
  if (!(drain_timeout_s >= 0 && drain_timeout_s <= 86400))
    fail("--drain-timeout must be between 0 (stop at once) and 86400 seconds");
  if (replica_name->count() > 0 && o.replica_name.empty())
    fail("--replica-name is empty: give a name, or leave the flag out for hostname:port");
  if (o.defaults.max_tokens_limit < 0 || o.defaults.max_tokens_limit > std::numeric_limits<int32_t>::max())
    fail("--max-tokens-limit must be between 0 (none) and 2147483647");
  if (api_key->count() > 0 && o.api_key.empty())
    fail("--api-key is empty: give a key, or leave the flag out to serve without authentication");
  if (reuse_slots < -1 || reuse_slots > 4096) fail("--reuse-slots must be between -1 and 4096");
  o.scheduler.reuse_slots = reuse_slots < 0 ? o.scheduler.parallel : reuse_slots;
  if (o.defaults.max_tokens < 0) fail("-n must be >= 0");
  validate(o.defaults.sampling);
  if (app.count("--seed") > 0) o.defaults.seed = o.defaults.sampling.seed;
  if (reasoning_format != "split" && reasoning_format != "none")
    fail("--reasoning-format '", reasoning_format, "' must be split or none");
  o.split_reasoning = reasoning_format == "split";
  o.scheduler.kv_memory_bytes = static_cast<size_t>(kv_memory_mib) << 20;
  o.max_body_bytes = static_cast<size_t>(max_body_kib) << 10;

  // Signals wait for the loop below; every thread blocks them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  // The port first: "loading" until the model is in (a signal meanwhile is taken once it is).
  o.listen_fd = http::listen_socket(o.host, o.port);
  const int port = http::socket_port(o.listen_fd);
  server::LoadingServer loading(o.listen_fd);
  std::cerr << "serve: loading the model; http://" + o.host + ":" + std::to_string(port) + "/health says loading\n"
            << std::flush;

  auto model = load_model(model_path, {.threads = o.threads});
  note_context(*model, kv.settings);
  for (const LogitBias& b : o.defaults.sampling.logit_bias)
    if (b.id >= model->config().vocab_size)
      fail("--logit-bias names token ", b.id, ", not a token id of this model (0 to ", model->config().vocab_size - 1, ")");
  {
    // The model's own statistics, if it carries any, are every request's default (a request
    // asking for TriAttention on a server started with another policy included).
    std::vector<std::string> own_warnings;
    if (kv.settings.stats_path.empty()) kv.settings.params.stats = load_embedded_stats(*model, &own_warnings);
    print_warnings(own_warnings);
    const PolicyFactory defaults(*model, kv.settings);  // loads and checks the statistics once
    print_warnings(defaults.warnings());
    o.defaults.kv = defaults.settings();
  }
  server::Server srv(model, o);
  loading.stop();  // connections arriving now wait in the socket's backlog for srv
  srv.start();
  // One write, so that a reader of this stream (tests, scripts) never sees half the address.
  const std::string ready = "serve: " + model->config().describe() + "\nserve: listening on http://" + o.host + ":" +
                            std::to_string(srv.port()) + " (KV policy " + kv.settings.policy + ", parallel " +
                            std::to_string(o.scheduler.parallel) + ")\n";
  std::cerr << ready << std::flush;

  // The first SIGTERM drains on its own thread; SIGINT, a second signal, or the drain's end
  // stop the server and this loop.
  std::atomic<bool> drained{false};
  std::thread drainer;
  for (;;) {
    const timespec tick{0, 100'000'000};
    const int sig = sigtimedwait(&sigs, nullptr, &tick);
    if (drained) break;
    if (sig < 0) continue;
    if (sig == SIGTERM && drain_timeout_s > 0 && !drainer.joinable()) {
      std::cerr << "serve: SIGTERM, draining (at most " << drain_timeout_s << " s; a second signal stops at once)\n";
      drainer = std::thread([&] {
        srv.drain(drain_timeout_s);
        drained = true;
      });
      continue;
    }
    std::cerr << "serve: signal " << sig << ", stopping\n";
    srv.stop();
    break;
  }
  if (drainer.joinable()) drainer.join();
  std::cerr << "serve: stopped\n";
  return 0;
}

}  // namespace triattn::cli
