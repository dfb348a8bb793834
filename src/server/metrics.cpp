#include "server/metrics.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

namespace triattn::server {

namespace {

std::string metric_number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string metric(const std::string& name, const char* type, const std::string& help, const std::string& value) {
  return "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + value + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double seconds) {
  const size_t b = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), seconds) - bounds_.begin());
  ++counts_[b];
  sum_ += seconds;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::string s = "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  int64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? metric_number(bounds_[i]) : "+Inf";
    s += name + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  s += name + "_sum " + metric_number(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
  return s;
}

ServerMetrics::ServerMetrics()
    : ttft_({0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      mask_({0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25}) {}

void ServerMetrics::request(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_by_status_[status];
}

void ServerMetrics::prompt(int64_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += tokens;
}

void ServerMetrics::generated(int64_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  generated_tokens_ += tokens;
}

void ServerMetrics::finished(const GenerateResult& r) {
  std::lock_guard<std::mutex> lock(mu_);
  reused_tokens_ += r.reused_tokens;
  prune_events_ += r.stats.prune_events;
  scoring_seconds_ += r.stats.scoring_ms / 1000.0;
  recalled_rows_ += r.stats.recalled_rows;
  recall_seconds_ += r.stats.recall_ms / 1000.0;
}

void ServerMetrics::first_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.observe(seconds);
}

void ServerMetrics::inter_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  itl_.observe(seconds);
}

void ServerMetrics::grammar_mask(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  mask_.observe(seconds);
}

namespace {

struct ProcessMemory {
  int64_t resident_bytes = 0, peak_resident_bytes = 0;
};

// VmRSS and VmHWM of /proc/self/status (0 where the system has no such file).
ProcessMemory process_memory() {
  ProcessMemory pm;
  std::ifstream in("/proc/self/status");
  std::string key;
  int64_t kib = 0;
  while (in >> key) {
    if (key == "VmRSS:" && in >> kib) pm.resident_bytes = kib * 1024;
    else if (key == "VmHWM:" && in >> kib) pm.peak_resident_bytes = kib * 1024;
    else in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return pm;
}

}  // namespace

std::string ServerMetrics::render(const Scheduler& s, int connections) const {
  std::string m;
  {
    std::lock_guard<std::mutex> lock(mu_);
    m += "# HELP triattn_requests_total Requests by how they ended: HTTP status (a stream: 200 at its [DONE], the status of its error event), 499 when the client went away first.\n# TYPE triattn_requests_total counter\n";
    for (const auto& [status, n] : requests_by_status_)
      m += "triattn_requests_total{status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
    m += metric("triattn_prompt_tokens_total", "counter", "Prompt tokens of accepted requests.",
                std::to_string(prompt_tokens_));
    m += metric("triattn_prompt_tokens_reused_total", "counter",
                "Prompt tokens continued from a kept conversation instead of prefilled.", std::to_string(reused_tokens_));
    m += metric("triattn_generated_tokens_total", "counter", "Tokens generated.", std::to_string(generated_tokens_));
    m += metric("triattn_prune_events_total", "counter", "KV pruning events.", std::to_string(prune_events_));
    m += metric("triattn_scoring_seconds_total", "counter", "Time the KV policies spent choosing what to keep.",
                metric_number(scoring_seconds_));
    m += metric("triattn_recalled_rows_total", "counter", "KV rows brought back from the cold tier (--kv-recall).",
                std::to_string(recalled_rows_));
    m += metric("triattn_recall_seconds_total", "counter", "Time recall events took (--kv-recall).",
                metric_number(recall_seconds_));
    m += ttft_.render("triattn_time_to_first_token_seconds", "From a request's arrival to its first token.");
    m += itl_.render("triattn_inter_token_seconds", "Between two tokens of one choice.");
    m += mask_.render("triattn_grammar_mask_seconds",
                      "Computing one token's grammar mask (response_format json_object/json_schema, grammar).");
  }
  m += metric("triattn_sequences_running", "gauge", "Sequences running.", std::to_string(s.running()));
  m += metric("triattn_sequences_queued", "gauge", "Requests waiting for admission.", std::to_string(s.queued()));
  m += metric("triattn_sequences_kept", "gauge", "Finished sequences kept for conversation reuse.",
              std::to_string(s.kept()));
  m += metric("triattn_kv_reserved_bytes", "gauge", "KV bytes reserved by running and kept sequences.",
              std::to_string(s.kv_reserved_bytes()));
  m += metric("triattn_kv_kept_bytes", "gauge", "KV bytes reserved by kept sequences.", std::to_string(s.kv_kept_bytes()));
  m += metric("triattn_kv_held_bytes", "gauge", "KV bytes the running and kept sequences hold now.",
              std::to_string(s.kv_bytes_in_use()));
  m += metric("triattn_kv_cold_bytes", "gauge",
              "Bytes the cold stores of the running and kept sequences hold now (--kv-recall; not in kv_held).",
              std::to_string(s.kv_cold_bytes()));
  m += metric("triattn_kv_pool_bytes", "gauge", "The KV pool (--kv-memory; 0 = no limit).",
              std::to_string(s.options().kv_memory_bytes));
  m += metric("triattn_http_connections", "gauge", "HTTP connections open.", std::to_string(connections));
  // The Prometheus names every client library exports for a process.
  const ProcessMemory pm = process_memory();
  m += metric("process_resident_memory_bytes", "gauge", "Resident memory of the server process.",
              std::to_string(pm.resident_bytes));
  m += metric("process_resident_memory_max_bytes", "gauge", "Peak resident memory of the server process (VmHWM).",
              std::to_string(pm.peak_resident_bytes));
  return m;
}

}  // namespace triattn::server
