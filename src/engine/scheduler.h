#pragma once
// The engine step over many sequences (DESIGN §2, the vLLM v1 shape): requests wait in a
// bounded queue until a running slot and their KV reservation are free; each step fills a
// token budget with one decode token per decoding sequence first, then prefill chunks, so
// a long prompt never stalls the others; every sequence prunes before its own append; one
// batched forward call streams the weights once for all of them; then each samples and
// checks its stops (engine/generation.h, the same rules as generate()).
//
// Threads: submit(), cancel() and the figures may be called from any thread (HTTP threads
// that parse, queue and stream); step() from one inference thread only. Request callbacks
// run on the inference thread.
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "engine/kv_setup.h"
#include "engine/sampler.h"
#include "engine/sequence.h"
#include "model/forward.h"

namespace triattn {

struct SchedulerOptions {
  int64_t max_batched_tokens = 512;  // tokens per step: decode tokens first, then prefill chunks
  int parallel = 4;                  // most sequences running at once
  size_t kv_memory_bytes = 0;        // the KV pool every running sequence reserves from; 0 = no limit
  int max_queued = 64;               // requests waiting for admission; past it submit() refuses
};

struct Request {
  std::vector<int32_t> prompt;
  GenerateOptions options;
  SamplerParams sampling;
  // The request's KV settings (policy, budget, statistics, context); must outlive it.
  const PolicyFactory* policies = nullptr;
  TextCallback on_text;                                // text as it becomes final; false stops
  std::function<void(const GenerateResult&)> on_done;  // exactly once per accepted request
  NoticeFn on_notice;
};

struct SubmitResult {
  enum class Status { Queued, QueueFull, TooLarge } status = Status::Queued;
  uint64_t id = 0;          // when queued
  size_t kv_bytes = 0;      // what the request reserves while it runs
  std::string reason;       // when refused
};

// What one step ran.
struct StepStats {
  int sequences = 0;           // in the forward call
  int64_t decode_tokens = 0;   // one per decoding sequence
  int64_t prefill_tokens = 0;  // prompt tokens, in chunks
  int finished = 0;            // requests that ended this step
};

class Scheduler {
 public:
  Scheduler(const Model& model, Forward& forward, const SchedulerOptions& options);
  ~Scheduler();

  // Checks the request (sampling parameters, prompt against the context rule, its KV
  // reservation against the pool) and queues it. A request whose reservation can never fit
  // the pool is TooLarge; a full queue is QueueFull (try again later).
  SubmitResult submit(Request request);
  // The request ends with finish reason "cancelled" at the next step (a running one frees its
  // sequence and reservation then; a queued one never starts). Unknown ids are ignored.
  void cancel(uint64_t id);

  // Admits what fits, runs one batched forward step, finishes what ended. Returns what it ran
  // (sequences == 0: nothing to do).
  StepStats step();
  // Steps until nothing is running or queued.
  void run_until_idle();

  // The KV bytes a request reserves: its policy's bound (B + β per stream under
  // compression), or prompt + max tokens capped by the context under full attention.
  size_t reservation_bytes(const Request& request) const;

  int running() const;
  int queued() const;
  size_t kv_reserved_bytes() const;  // sum of the running sequences' reservations
  size_t kv_bytes_in_use() const;    // K+V rows the running sequences hold now
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Running;
  struct Queued {
    uint64_t id;
    Request request;
    size_t kv_bytes;
  };
  // With the policy's bound for this prompt already computed.
  size_t reservation_bytes(const Request& request, int64_t bound) const;
  void admit();
  void finish(Running& r);

  const Model& model_;
  Forward& forward_;
  SchedulerOptions options_;

  mutable std::mutex mu_;  // guards the fields below
  std::deque<Queued> queue_;
  std::set<uint64_t> cancelled_;
  uint64_t next_id_ = 1;
  size_t reserved_ = 0;
  size_t in_use_ = 0;
  int running_count_ = 0;

  std::vector<std::unique_ptr<Running>> running_;  // inference thread only
};

}  // namespace triattn
