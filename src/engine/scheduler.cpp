#include "engine/scheduler.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace triattn {

struct Scheduler::Running {
  uint64_t id = 0;
  Request request;
  size_t kv_bytes = 0;
  std::unique_ptr<Sequence> seq;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<Generation> gen;
};

Scheduler::Scheduler(const Model& model, Forward& forward, const SchedulerOptions& options)
    : model_(model), forward_(forward), options_(options) {
  if (options.max_batched_tokens < 1) fail("scheduler: the step token budget must be at least 1");
  if (options.parallel < 1) fail("scheduler: at least one sequence must be allowed to run");
  if (options.max_queued < 0) fail("scheduler: the queue length must not be negative");
}

Scheduler::~Scheduler() = default;

size_t Scheduler::reservation_bytes(const Request& request) const {
  return reservation_bytes(request, request.policies->memory_bound(static_cast<int64_t>(request.prompt.size())));
}

size_t Scheduler::reservation_bytes(const Request& request, int64_t bound) const {
  const ModelConfig& c = model_.config();
  const PolicyFactory& p = *request.policies;
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  int64_t tokens = bound;
  if (tokens == 0) {  // unbounded: everything the request can reach, capped by the context
    tokens = prompt + std::max<int64_t>(0, request.options.n_predict);
    if (p.context_limit() > 0) tokens = std::min(tokens, p.context_limit());
  }
  const size_t row = row_bytes(p.settings().cache_type, c.head_dim);
  return static_cast<size_t>(tokens) * static_cast<size_t>(c.n_layers) * static_cast<size_t>(c.n_kv_heads) * row * 2;
}

SubmitResult Scheduler::submit(Request request) {
  if (!request.policies) fail("scheduler: a request needs its KV settings (policies)");
  if (request.prompt.empty()) fail("the prompt is empty (nothing to condition on)");
  validate(request.sampling);
  const PolicyFactory& p = *request.policies;
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  // The policy's bound, computed once (it builds a policy instance).
  const int64_t bound = p.memory_bound(prompt);
  if (bound == 0 && p.context_limit() > 0 && prompt > p.context_limit())
    fail("the prompt has ", prompt, " tokens, more than the context of ", p.context_limit(), " the '",
         p.settings().policy, "' policy can hold: shorten it, or use a compressing KV policy");
  for (int32_t id : request.prompt)
    if (id < 0 || id >= model_.config().vocab_size) fail("token id ", id, " is outside the vocabulary");
  SubmitResult r;
  r.kv_bytes = reservation_bytes(request, bound);
  if (options_.kv_memory_bytes > 0 && r.kv_bytes > options_.kv_memory_bytes) {
    r.status = SubmitResult::Status::TooLarge;
    r.reason = "the request needs " + std::to_string(r.kv_bytes) + " bytes of KV cache, more than the whole pool (" +
               std::to_string(options_.kv_memory_bytes) + " bytes): ask for fewer tokens or use a compressing policy";
    return r;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (static_cast<int>(queue_.size()) >= options_.max_queued) {
    r.status = SubmitResult::Status::QueueFull;
    r.reason = "the queue is full (" + std::to_string(options_.max_queued) + " requests waiting)";
    return r;
  }
  r.id = next_id_++;
  queue_.push_back({r.id, std::move(request), r.kv_bytes});
  return r;
}

void Scheduler::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_.insert(id);
}

void Scheduler::admit() {
  // FIFO: the head waits until it fits, so a large request is not starved by small ones.
  for (;;) {
    Queued q;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) return;
      Queued& head = queue_.front();
      const bool cancelled = cancelled_.erase(head.id) > 0;
      if (!cancelled) {
        if (running_count_ >= options_.parallel) return;
        if (options_.kv_memory_bytes > 0 && reserved_ + head.kv_bytes > options_.kv_memory_bytes) return;
        reserved_ += head.kv_bytes;
        ++running_count_;
      }
      q = std::move(head);
      queue_.pop_front();
      if (cancelled) {
        GenerateResult res;
        res.finish_reason = "cancelled";
        if (q.request.on_done) q.request.on_done(res);
        continue;
      }
    }
    auto r = std::make_unique<Running>();
    r->id = q.id;
    r->request = std::move(q.request);
    r->kv_bytes = q.kv_bytes;
    try {
      r->seq = std::make_unique<Sequence>(model_, *r->request.policies, r->request.on_notice);
      r->sampler = std::make_unique<Sampler>(r->request.sampling);
      r->gen = std::make_unique<Generation>(model_, *r->seq, r->request.prompt, r->request.options, *r->sampler,
                                            r->request.on_text);
    } catch (const std::exception& e) {
      GenerateResult res;
      res.finish_reason = "error";
      res.error = e.what();
      {
        std::lock_guard<std::mutex> lock(mu_);
        reserved_ -= r->kv_bytes;
        --running_count_;
      }
      if (r->request.on_done) r->request.on_done(res);
      continue;
    }
    running_.push_back(std::move(r));
  }
}

StepStats Scheduler::step() {
  admit();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& r : running_)
      if (cancelled_.erase(r->id) > 0) r->gen->stop("cancelled");
  }

  // Plan: a decode token for every decoding sequence first, then prefill chunks in admission
  // order, within the token budget.
  struct Planned {
    Running* r;
    std::span<const int32_t> tokens;
  };
  std::vector<Planned> plan;
  int64_t budget = options_.max_batched_tokens;
  StepStats st;
  for (auto& r : running_)
    if (budget > 0 && !r->gen->done() && !r->gen->in_prefill()) {
      plan.push_back({r.get(), r->gen->pending().first(1)});
      --budget;
      ++st.decode_tokens;
    }
  for (auto& r : running_)
    if (budget > 0 && !r->gen->done() && r->gen->in_prefill()) {
      const std::span<const int32_t> p = r->gen->pending();
      int64_t n = std::min<int64_t>(static_cast<int64_t>(p.size()), r->seq->max_step());
      if (n > budget) {
        // A pruning sequence takes whole chunks, as alone: where a chunk ends decides when it
        // prunes, so a split chunk would change what it keeps. It waits for a step with room
        // (only a chunk larger than the whole budget is split). Without pruning any split
        // gives the same result.
        if (r->seq->memory_bound() > 0 && budget < options_.max_batched_tokens) continue;
        n = budget;
      }
      plan.push_back({r.get(), p.first(static_cast<size_t>(n))});
      budget -= n;
      st.prefill_tokens += n;
    }

  // Each sequence prunes before its own append; one that fails here (the context rule) ends
  // with an error and leaves the step.
  std::vector<ForwardItem> items;
  std::vector<Planned> in_step;
  for (const Planned& p : plan) {
    try {
      const bool want_logits = p.tokens.size() == p.r->gen->pending().size();
      items.push_back(p.r->seq->begin_step(p.tokens, want_logits, forward_.pool()));
      in_step.push_back(p);
    } catch (const std::exception& e) {
      p.r->gen->fail_with(e.what());
    }
  }
  if (!items.empty()) {
    std::vector<std::vector<float>> logits;
    forward_.run(items, logits);
    for (size_t i = 0; i < in_step.size(); ++i) {
      Running& r = *in_step[i].r;
      r.seq->end_step(in_step[i].tokens);
      try {
        r.gen->fed(static_cast<int64_t>(in_step[i].tokens.size()), logits[i]);
      } catch (const std::exception& e) {
        r.gen->fail_with(e.what());
      }
    }
  }
  st.sequences = static_cast<int>(items.size());

  size_t in_use = 0;
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->gen->done()) {
      finish(**it);
      it = running_.erase(it);
      ++st.finished;
    } else {
      in_use += (*it)->seq->cache().bytes_in_use();
      ++it;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ = in_use;
  return st;
}

void Scheduler::finish(Running& r) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reserved_ -= r.kv_bytes;
    --running_count_;
  }
  if (r.request.on_done) r.request.on_done(r.gen->result());
}

void Scheduler::run_until_idle() {
  for (;;) {
    const StepStats st = step();
    if (st.sequences == 0 && running() == 0 && queued() == 0) return;
    if (st.sequences == 0 && st.finished == 0 && running() == 0) {
      // Something is queued that cannot be admitted while nothing runs: it never will.
      std::lock_guard<std::mutex> lock(mu_);
      if (!queue_.empty() && running_count_ == 0) fail("scheduler: a queued request can never be admitted");
    }
  }
}

int Scheduler::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_count_;
}

int Scheduler::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(queue_.size());
}

size_t Scheduler::kv_reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

size_t Scheduler::kv_bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

}  // namespace triattn
