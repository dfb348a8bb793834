// triattn bench-serve: a load generator for a running `triattn serve` (or any server of the
// same API). For each concurrency level it keeps that many streaming completions in flight,
// each a fixed random prompt and a fixed generation length (ignore_eos), and prints the
// summed generation throughput, time-to-first-token and inter-token latency percentiles,
// and the server's own figures sampled from /metrics (running sequences, KV held/reserved).
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/http_url.h"

namespace triattn::cli {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

double metric(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? 0 : std::stod(text.substr(at + name.size() + 2));
}

struct Level {
  int concurrency = 0, requests = 0, errors = 0;
  double wall_s = 0, tokens = 0;
  std::vector<double> ttft_ms, itl_ms;
  double max_running = 0, max_held = 0, max_reserved = 0, pool = 0, peak_rss = 0;
  int64_t prune_events = 0;
};

}  // namespace

int cmd_bench_serve(const std::vector<std::string>& args) {
  CLI::App app{"Load a triattn server with concurrent streaming completions and measure it", "triattn bench-serve"};
  std::string url = "http://127.0.0.1:8080", api_key, kv_policy;
  std::vector<int> levels = {1, 4, 16};
  int requests_per_client = 2, prompt_tokens = 128, gen_tokens = 256, vocab = 0;
  int64_t kv_budget = 0;
  bool as_json = false;
  uint64_t seed = 1;
  app.add_option("--url", url, "server address")->capture_default_str();
  app.add_option("--api-key", api_key, "sent as Authorization: Bearer KEY");
  app.add_option("--concurrency", levels, "clients in flight, per level (comma-separated)")->delimiter(',')
      ->capture_default_str();
  app.add_option("--requests-per-client", requests_per_client, "requests each client sends per level")->capture_default_str();
  app.add_option("--prompt-tokens", prompt_tokens, "random prompt length in tokens")->capture_default_str();
  app.add_option("--gen-tokens", gen_tokens, "tokens generated per request (ignore_eos)")->capture_default_str();
  app.add_option("--vocab", vocab, "prompt token ids below this (0 = 256)")->capture_default_str();
  app.add_option("--kv-policy", kv_policy, "kv_policy sent with each request (default: the server's)");
  app.add_option("--kv-budget", kv_budget, "kv_budget sent with each request (0 = the server's)")->capture_default_str();
  app.add_option("--seed", seed, "seed of the random prompts")->capture_default_str();
  app.add_flag("--json", as_json, "print one JSON object");
  if (int rc = parse(app, args); rc >= 0) return rc;
  const HttpUrl u = parse_http_url(url);
  for (int c : levels)
    if (c < 1 || c > 1024) fail("--concurrency levels must be between 1 and 1024");
  if (requests_per_client < 1 || prompt_tokens < 1 || gen_tokens < 1) fail("request counts and lengths must be positive");
  const int id_limit = vocab > 0 ? vocab : 256;

  std::vector<Level> results;
  for (int c : levels) {
    Level lv;
    lv.concurrency = c;
    std::mutex mu;
    std::atomic<bool> running{true};
    // The server's gauges, sampled while the level runs.
    std::thread sampler([&] {
      httplib::Client m(u.host, u.port);
      while (running) {
        if (auto r = m.Get("/metrics"); r && r->status == 200) {
          std::lock_guard<std::mutex> lock(mu);
          lv.max_running = std::max(lv.max_running, metric(r->body, "triattn_sequences_running"));
          lv.max_held = std::max(lv.max_held, metric(r->body, "triattn_kv_held_bytes"));
          lv.max_reserved = std::max(lv.max_reserved, metric(r->body, "triattn_kv_reserved_bytes"));
          lv.pool = metric(r->body, "triattn_kv_pool_bytes");
          lv.peak_rss = std::max(lv.peak_rss, metric(r->body, "process_resident_memory_max_bytes"));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    const auto t0 = Clock::now();
    std::vector<std::thread> clients;
    for (int k = 0; k < c; ++k)
      clients.emplace_back([&, k] {
        std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(k));
        httplib::Client cl(u.host, u.port);
        cl.set_read_timeout(3600, 0);
        httplib::Headers h;
        if (!api_key.empty()) h.emplace("Authorization", "Bearer " + api_key);
        for (int i = 0; i < requests_per_client; ++i) {
          std::vector<int> prompt(static_cast<size_t>(prompt_tokens));
          for (int& t : prompt) t = static_cast<int>(rng() % static_cast<uint64_t>(id_limit));
          json body = {{"prompt", prompt}, {"max_tokens", gen_tokens}, {"temperature", 0}, {"ignore_eos", true},
                       {"stream", true}, {"stream_options", {{"include_usage", true}}}};
          if (!kv_policy.empty()) body["kv_policy"] = kv_policy;
          if (kv_budget > 0) body["kv_budget"] = kv_budget;
          const auto start = Clock::now();
          double first_ms = -1, last_ms = 0;
          int64_t tokens = 0, prunes = 0;
          std::string buf;
          httplib::Request req;
          req.method = "POST";
          req.path = u.api_root + "/completions";
          req.headers = h;
          req.body = body.dump();
          req.set_header("Content-Type", "application/json");
          req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
            const double now = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
            buf.append(data, n);
            size_t at;
            while ((at = buf.find("\n\n")) != std::string::npos) {
              const std::string ev = buf.substr(0, at);
              buf.erase(0, at + 2);
              if (ev.rfind("data: {", 0) != 0) continue;
              const json j = json::parse(ev.substr(6), nullptr, false);
              if (j.is_discarded()) continue;
              if (j.contains("usage")) {
                tokens = j["usage"].value("completion_tokens", 0);
                prunes = j["usage"].value("prune_events", 0);
              } else if (!j["choices"].empty() && !j["choices"][0]["text"].get<std::string>().empty()) {
                if (first_ms < 0) first_ms = now;
                last_ms = now;
              }
            }
            return true;
          };
          const auto res = cl.send(req);
          std::lock_guard<std::mutex> lock(mu);
          if (!res || res->status != 200 || tokens == 0) {
            ++lv.errors;
            continue;
          }
          ++lv.requests;
          lv.tokens += static_cast<double>(tokens);
          lv.prune_events += prunes;
          if (first_ms >= 0) lv.ttft_ms.push_back(first_ms);
          if (tokens > 1) lv.itl_ms.push_back((last_ms - first_ms) / static_cast<double>(tokens - 1));
        }
      });
    for (auto& t : clients) t.join();
    lv.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    running = false;
    sampler.join();
    std::fprintf(stderr,
                 "bench-serve: concurrency %d: %d requests (%d errors) in %.1f s, %.1f generated tok/s, TTFT p50 %.0f "
                 "ms, ITL p50 %.1f ms, running <= %.0f, KV held <= %.1f MiB\n",
                 c, lv.requests, lv.errors, lv.wall_s, lv.tokens / lv.wall_s, percentile(lv.ttft_ms, 0.5),
                 percentile(lv.itl_ms, 0.5), lv.max_running, lv.max_held / 1048576.0);
    results.push_back(std::move(lv));
  }

  if (as_json) {
    json out = {{"url", url}, {"prompt_tokens", prompt_tokens}, {"gen_tokens", gen_tokens},
                {"kv_policy", kv_policy}, {"levels", json::array()}};
    for (const Level& lv : results)
      out["levels"].push_back({{"concurrency", lv.concurrency}, {"requests", lv.requests}, {"errors", lv.errors},
                               {"wall_s", lv.wall_s}, {"gen_tok_s", lv.tokens / lv.wall_s},
                               {"ttft_ms_p50", percentile(lv.ttft_ms, 0.5)}, {"ttft_ms_p90", percentile(lv.ttft_ms, 0.9)},
                               {"ttft_ms_p99", percentile(lv.ttft_ms, 0.99)},
                               {"itl_ms_p50", percentile(lv.itl_ms, 0.5)}, {"itl_ms_p90", percentile(lv.itl_ms, 0.9)},
                               {"itl_ms_p99", percentile(lv.itl_ms, 0.99)},
                               {"max_running", lv.max_running}, {"max_kv_held_bytes", lv.max_held},
                               {"max_kv_reserved_bytes", lv.max_reserved}, {"kv_pool_bytes", lv.pool},
                               {"server_peak_rss_bytes", lv.peak_rss}, {"prune_events", lv.prune_events}});
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("| concurrency | requests | errors | wall s | gen tok/s | TTFT p50 / p99 ms | ITL p50 / p99 ms | "
              "running max | KV held max MiB | KV reserved max / pool MiB | server peak RSS MiB | prune events |\n"
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Level& lv : results)
    std::printf("| %d | %d | %d | %.1f | %.1f | %.0f / %.0f | %.1f / %.1f | %.0f | %.1f | %.1f / %.0f | %.0f | %lld |\n",
                lv.concurrency, lv.requests, lv.errors, lv.wall_s, lv.tokens / lv.wall_s, percentile(lv.ttft_ms, 0.5),
                percentile(lv.ttft_ms, 0.99), percentile(lv.itl_ms, 0.5), percentile(lv.itl_ms, 0.99), lv.max_running,
                lv.max_held / 1048576.0, lv.max_reserved / 1048576.0, lv.pool / 1048576.0, lv.peak_rss / 1048576.0,
                static_cast<long long>(lv.prune_events));
  return 0;
}

}  // namespace triattn::cli
