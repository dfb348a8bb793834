#pragma once
// The engine step over many sequences (docs/design.md, "The seams"; the vLLM v1 shape): requests wait in a
// bounded queue until a running slot and their KV reservation are free; each step fills a
// token budget with one decode token per decoding sequence first, then prefill chunks, so
// a long prompt never stalls the others; every sequence prunes before its own append; one
// batched forward call streams the weights once for all of them; then each samples and
// checks its stops (engine/generation.h, the same rules as generate()).
//
// A request with n choices is prefilled once; when its prompt is in, the sequence is forked
// into n (Sequence::fork) and each samples on its own. A finished sequence may be kept
// (`reuse_slots`): a later request with the same KV settings whose prompt starts with that
// sequence's whole history continues from its (compressed) cache instead of prefilling
// again — the next turn of a conversation.
//
// Threads: submit(), cancel() and the figures may be called from any thread (HTTP threads
// that parse, queue and stream); step() from one inference thread only. Request callbacks
// run on the inference thread.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "engine/kv_pool.h"
#include "engine/kv_setup.h"
#include "engine/sampler.h"
#include "engine/sequence.h"
#include "engine/step.h"
#include "model/forward.h"

namespace triattn {

struct SchedulerOptions {
  int64_t max_batched_tokens = 512;  // tokens per step: decode tokens first, then prefill chunks
  int parallel = 4;                  // most sequences running at once
  size_t kv_memory_bytes = 0;        // the KV pool every running sequence reserves from; 0 = no limit
  int max_queued = 64;               // requests waiting for admission; past it submit() refuses
  // Finished sequences kept for conversation reuse, least recently used dropped first. They
  // keep their KV reservation in the pool until reused or dropped (dropped first when a
  // waiting request needs the room). 0 = none.
  int reuse_slots = 0;
};

struct Request {
  std::vector<int32_t> prompt;
  GenerateOptions options;
  SamplerParams sampling;  // choice i samples with seed + i
  int n = 1;               // choices (1 .. parallel), sharing one prefill
  // May continue a kept sequence whose history the prompt starts with (never when prompt
  // log-probabilities are asked for: the reused part would have none).
  bool reuse = true;
  // The request's KV settings (policy, budget, statistics, context); must outlive it.
  const PolicyFactory* policies = nullptr;
  // Past this, a queued request ends unstarted with finish reason "timeout" and a running one
  // ends with "length" (what it generated stands). The default: none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Per choice, on the inference thread: text as it becomes final (false stops that choice),
  // each sampled token, and the end, exactly once per choice of an accepted request.
  std::function<bool(int choice, const std::string& text)> on_text;
  std::function<void(int choice, const TokenEvent& token)> on_token;
  std::function<void(int choice, const GenerateResult& result)> on_done;
  NoticeFn on_notice;
};

struct SubmitResult {
  enum class Status { Queued, QueueFull, TooLarge } status = Status::Queued;
  uint64_t id = 0;          // when queued
  size_t kv_bytes = 0;      // what the request reserves while it runs (all its choices)
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

  // Checks the request (sampling parameters, n, prompt against the context rule, its KV
  // reservation against the pool) and queues it. A request whose reservation can never fit
  // the pool is TooLarge; a full queue is QueueFull (try again later).
  SubmitResult submit(Request request);
  // The request ends with finish reason "cancelled" at the next step (a running one frees its
  // sequence and reservation then; a queued one never starts). Unknown ids are ignored.
  void cancel(uint64_t id);
  // Drops at once the kept sequences whose history is `history`, or all of it but its last
  // token (a reply's last token is fed only when the conversation goes on), giving back their
  // reservations: a conversation its client deleted.
  // Sequences that went on from it are other histories and stay. Returns how many. Thread-safe.
  int drop_kept(std::span<const int32_t> history);

  // Admits what fits, runs one batched forward step, finishes what ended. Returns what it ran
  // (sequences == 0: nothing to do).
  StepStats step();
  // Steps until nothing is running or queued.
  void run_until_idle();

  // The KV bytes one choice of a request reserves: its policy's bound (B + β per stream under
  // compression), or prompt + max tokens capped by the context under full attention.
  size_t reservation_bytes(const Request& request) const;

  int running() const;
  int queued() const;
  size_t kv_reserved_bytes() const;  // sum of the running and kept sequences' reservations
  size_t kv_bytes_in_use() const;    // K+V rows the running and kept sequences hold now
  size_t kv_cold_bytes() const;      // their cold stores (--kv-recall), apart from the rows above
  int kept() const;                  // finished sequences kept for reuse
  size_t kv_kept_bytes() const;      // their reservations
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Running;
  struct Kept;
  struct Queued {
    uint64_t id;
    std::shared_ptr<Request> request;
    size_t kv_bytes;  // per choice
  };
  // With the policy's bound for this prompt already computed.
  size_t reservation_bytes(const Request& request, int64_t bound) const;
  void admit();
  // Starts choice 0 of a request (continuing `kept` when given); false when it failed (then
  // every choice ended with an error).
  void start(Queued q, std::unique_ptr<Kept> kept);
  // Forks the other choices of r at the step that completes its prompt.
  void fork_choices(Running& r, std::vector<std::unique_ptr<Running>>& out);
  void finish(Running& r);
  // Ends the choices of a request that never started (cancelled, failed) with `result`.
  void end_unstarted(const Request& request, int first_choice, const GenerateResult& result) const;
  void keep(std::unique_ptr<Sequence> seq, const Request& request, size_t kv_bytes);
  // Takes kept sequence i out and gives its reservation back; the caller holds mu_ and
  // destroys it after releasing the lock.
  std::unique_ptr<Kept> drop_kept_at(size_t i);

  const Model& model_;
  EngineStep step_;  // the forward pass, one call per step
  SchedulerOptions options_;

  mutable std::mutex mu_;  // guards the fields below
  std::deque<Queued> queue_;
  std::set<uint64_t> cancelled_;
  std::set<uint64_t> active_;  // queued or running ids (cancel() ignores others)
  uint64_t next_id_ = 1;
  KvPool pool_;                // running and kept sequences' reservations
  size_t in_use_ = 0, cold_in_use_ = 0;
  int running_count_ = 0;      // running choices, and choices still to be forked
  int kept_count_ = 0;

  std::vector<std::unique_ptr<Running>> running_;  // inference thread only
  std::vector<std::unique_ptr<Kept>> kept_;        // guarded by mu_ (drop_kept); oldest first
};

}  // namespace triattn
