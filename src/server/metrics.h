#pragma once
// The server's Prometheus figures: counters of requests and tokens, latency histograms
// (time to first token, time between tokens), and the scheduler's gauges read when scraped.
// Every method is safe from any thread.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/generate.h"
#include "engine/scheduler.h"

namespace triattn::server {

// A Prometheus histogram: cumulative buckets by upper bound (seconds), sum and count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double seconds);
  // "# TYPE name histogram" and its _bucket{le=...}, _sum and _count lines.
  std::string render(const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket (not cumulative), the last one +Inf
  double sum_ = 0;
  int64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void request(int status);
  // A request was accepted with this many prompt tokens.
  void prompt(int64_t tokens);
  // Tokens generated, counted as they are sampled.
  void generated(int64_t tokens);
  // One choice ended (reused prompt tokens, KV figures).
  void finished(const GenerateResult& r);
  void first_token(double seconds);  // from the request's arrival
  void inter_token(double seconds);  // since the choice's previous token
  void grammar_mask(double seconds);  // one token's grammar mask (constrained decoding)
  // With the scheduler's gauges and the HTTP connections open now.
  std::string render(const Scheduler& scheduler, int connections) const;

 private:
  mutable std::mutex mu_;
  std::map<int, int64_t> requests_by_status_;
  int64_t prompt_tokens_ = 0, reused_tokens_ = 0, generated_tokens_ = 0, prune_events_ = 0;
  double scoring_seconds_ = 0;
  int64_t recalled_rows_ = 0;
  double recall_seconds_ = 0;
  Histogram ttft_, itl_, mask_;
};

}  // namespace triattn::server
