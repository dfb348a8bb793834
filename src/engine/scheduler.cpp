#include "engine/scheduler.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "model/kv_shape.h"

namespace triattn {

// One choice of a running request.
struct Scheduler::Running {
  uint64_t id = 0;
  int choice = 0;
  std::shared_ptr<Request> request;  // shared by the request's choices
  size_t kv_bytes = 0;               // this choice's reservation
  int forks_pending = 0;             // choice 0: choices still to fork from it (reserved already)
  int64_t reused = 0;                // prompt tokens continued from a kept sequence
  std::unique_ptr<Sequence> seq;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<Generation> gen;
};

// A finished sequence kept for conversation reuse.
struct Scheduler::Kept {
  std::unique_ptr<Sequence> seq;
  KvSettings settings;
  size_t kv_bytes = 0;
};

namespace {

SamplerParams choice_sampling(const SamplerParams& s, int choice) {
  SamplerParams c = s;
  c.seed += static_cast<uint64_t>(choice);
  return c;
}

std::function<bool(const std::string&)> text_of_choice(const std::shared_ptr<Request>& r, int choice) {
  if (!r->on_text) return nullptr;
  return [r, choice](const std::string& t) { return r->on_text(choice, t); };
}

std::function<void(const TokenEvent&)> token_of_choice(const std::shared_ptr<Request>& r, int choice) {
  if (!r->on_token) return nullptr;
  return [r, choice](const TokenEvent& t) { r->on_token(choice, t); };
}

GenerateResult ended(const std::string& reason, const std::string& error = "") {
  GenerateResult g;
  g.finish_reason = reason;
  g.error = error;
  return g;
}

}  // namespace

Scheduler::Scheduler(const Model& model, Forward& forward, const SchedulerOptions& options)
    : model_(model), step_(forward), options_(options), pool_(options.kv_memory_bytes) {
  if (options.max_batched_tokens < 1) fail("scheduler: the step token budget must be at least 1");
  if (options.parallel < 1) fail("scheduler: at least one sequence must be allowed to run");
  if (options.max_queued < 0) fail("scheduler: the queue length must not be negative");
  if (options.reuse_slots < 0) fail("scheduler: the number of kept sequences must not be negative");
}

Scheduler::~Scheduler() = default;

size_t Scheduler::reservation_bytes(const Request& request) const {
  return reservation_bytes(request, request.policies->memory_bound(static_cast<int64_t>(request.prompt.size())));
}

size_t Scheduler::reservation_bytes(const Request& request, int64_t bound) const {
  const ModelConfig& c = model_.config();
  const PolicyFactory& p = *request.policies;
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  // Everything the request can reach, capped by the context.
  int64_t reach = prompt + std::max<int64_t>(0, request.options.n_predict);
  if (p.context_limit() > 0) reach = std::min(reach, p.context_limit());
  // A compressing policy holds at most its bound, and never more than the request can reach.
  const int64_t full_tokens = bound > 0 ? std::min(bound, prompt + std::max<int64_t>(0, request.options.n_predict)) : reach;
  // A sliding-window layer holds its window (the forward pass trims it after each step, so a
  // step's tokens come on top) whatever the policy's bound, which counts the full layers.
  const int64_t step = std::max<int64_t>(1, p.settings().prefill_chunk);
  size_t bytes = 0;  // K and V rows summed over layers, each of its own KV heads and row size
  for (int l = 0; l < c.n_layers; ++l)
    if (!c.is_delta(l)) {
      const int64_t tokens = c.is_sliding(l) ? std::min(reach, c.layer(l).window - 1 + step) : full_tokens;
      bytes += static_cast<size_t>(tokens) * static_cast<size_t>(c.layer_kv_heads(l)) *
               row_bytes(p.settings().cache_type, c.layer_head_dim(l)) * 2;
    }
  // The cold tier (--kv-recall) holds what the policy evicts, at most its cap: the rows beyond
  // the bound the request can reach, as the cold store keeps them (ColdStore: a Q8_0 K and V
  // row, F16 where the head dimension is not a multiple of 32, a position and a score).
  size_t cold = 0;
  if (p.settings().recall.on && bound > 0) {
    const int64_t evicted = std::max<int64_t>(0, reach - bound);
    for (int l = 0; l < c.n_layers; ++l)
      if (!c.is_delta(l) && !c.is_sliding(l)) {
        const int d = c.layer_head_dim(l);
        const DType t = d % block_size(DType::Q8_0) == 0 ? DType::Q8_0 : DType::F16;
        cold += static_cast<size_t>(evicted) * static_cast<size_t>(c.layer_kv_heads(l)) *
                (2 * row_bytes(t, d) + sizeof(int32_t) + sizeof(float));
      }
    cold = std::min(cold, static_cast<size_t>(p.settings().recall.cold_bytes));
  }
  // A DeltaNet layer keeps no rows but a fixed recurrent state per sequence.
  return bytes + cold + sequence_state_bytes(c);
}

SubmitResult Scheduler::submit(Request request) {
  if (!request.policies) fail("scheduler: a request needs its KV settings (policies)");
  if (request.prompt.empty()) fail("the prompt is empty (nothing to condition on)");
  if (request.n < 1 || request.n > options_.parallel)
    fail("n = ", request.n, " choices: at least 1, and at most the ", options_.parallel,
         " sequences that run at once (--parallel)");
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
  const size_t per_choice = reservation_bytes(request, bound);
  r.kv_bytes = per_choice * static_cast<size_t>(request.n);
  if (!pool_.could_ever_fit(r.kv_bytes)) {
    r.status = SubmitResult::Status::TooLarge;
    r.reason = "the request needs " + std::to_string(r.kv_bytes) + " bytes of KV cache, more than the whole pool (" +
               std::to_string(options_.kv_memory_bytes) + " bytes): ask for fewer tokens" +
               (bound > 0 ? std::string(" or a smaller budget") : std::string(" or use a compressing policy"));
    return r;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (static_cast<int>(queue_.size()) >= options_.max_queued) {
    r.status = SubmitResult::Status::QueueFull;
    r.reason = "the queue is full (" + std::to_string(options_.max_queued) + " requests waiting)";
    return r;
  }
  r.id = next_id_++;
  active_.insert(r.id);
  queue_.push_back({r.id, std::make_shared<Request>(std::move(request)), per_choice});
  return r;
}

void Scheduler::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (active_.count(id)) cancelled_.insert(id);
}

int Scheduler::drop_kept(std::span<const int32_t> history) {
  std::vector<std::unique_ptr<Kept>> dropped;  // destroyed after the lock is released
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < kept_.size();) {
    const std::vector<int32_t>& h = kept_[i]->seq->history();
    if (h.size() <= history.size() && h.size() + 1 >= history.size() && std::equal(h.begin(), h.end(), history.begin())) {
      dropped.push_back(drop_kept_at(i));
    } else {
      ++i;
    }
  }
  return static_cast<int>(dropped.size());
}

void Scheduler::end_unstarted(const Request& request, int first_choice, const GenerateResult& result) const {
  if (!request.on_done) return;
  for (int c = first_choice; c < request.n; ++c) request.on_done(c, result);
}

void Scheduler::admit() {
  // Requests whose deadline passed while they waited end here, wherever they are in the queue.
  std::vector<Queued> expired;
  {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (now >= it->request->deadline) {
        active_.erase(it->id);
        cancelled_.erase(it->id);
        expired.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const Queued& q : expired)
    end_unstarted(*q.request, 0, ended("timeout", "the request waited past its deadline (--request-timeout) "
                                                  "before a sequence was free to run it"));
  // FIFO: the head waits until it fits, so a large request is not starved by small ones.
  for (;;) {
    Queued q;
    bool cancelled = false;
    std::unique_ptr<Kept> reused;
    std::vector<std::unique_ptr<Kept>> dropped;  // destroyed outside the lock
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) return;
      Queued& head = queue_.front();
      cancelled = cancelled_.erase(head.id) > 0;
      if (!cancelled) {
        const Request& req = *head.request;
        if (running_count_ + req.n > options_.parallel) return;
        // The kept sequence this prompt continues, the longest if several: same settings, its
        // whole history a proper prefix of the prompt.
        int match = -1;
        if (req.reuse && req.options.prompt_logprobs < 0)
          for (size_t i = 0; i < kept_.size(); ++i) {
            const std::vector<int32_t>& h = kept_[i]->seq->history();
            if (kept_[i]->settings == req.policies->settings() && !h.empty() && h.size() < req.prompt.size() &&
                std::equal(h.begin(), h.end(), req.prompt.begin()) &&
                (match < 0 || h.size() > kept_[static_cast<size_t>(match)]->seq->history().size()))
              match = static_cast<int>(i);
          }
        const size_t need = head.kv_bytes * static_cast<size_t>(req.n);
        const size_t freed = match >= 0 ? kept_[static_cast<size_t>(match)]->kv_bytes : 0;
        auto fits = [&] { return pool_.fits(need, freed); };
        // Kept sequences give their room back to a waiting request, oldest first.
        for (size_t i = 0; !fits() && i < kept_.size();) {
          if (static_cast<int>(i) == match) {
            ++i;
            continue;
          }
          dropped.push_back(drop_kept_at(i));
          if (match > static_cast<int>(i)) --match;
        }
        if (!fits()) return;
        if (match >= 0) {
          reused = std::move(kept_[static_cast<size_t>(match)]);
          kept_.erase(kept_.begin() + match);
          pool_.unkeep(reused->kv_bytes);
          --kept_count_;
        }
        pool_.release(freed);
        pool_.reserve(need);
        running_count_ += req.n;
      }
      q = std::move(head);
      queue_.pop_front();
      if (cancelled) active_.erase(q.id);
    }
    if (cancelled) {
      end_unstarted(*q.request, 0, ended("cancelled"));
      continue;
    }
    start(std::move(q), std::move(reused));
  }
}

void Scheduler::start(Queued q, std::unique_ptr<Kept> kept) {
  auto r = std::make_unique<Running>();
  r->id = q.id;
  r->request = q.request;
  r->kv_bytes = q.kv_bytes;
  r->forks_pending = q.request->n - 1;
  const Request& req = *r->request;
  try {
    std::span<const int32_t> prompt(req.prompt);
    if (kept) {
      r->seq = std::move(kept->seq);
      r->seq->set_notices(req.on_notice);
      r->seq->stats() = RunStats{};  // this request's figures (the cache keeps its own)
      r->reused = static_cast<int64_t>(r->seq->history().size());
      prompt = prompt.subspan(static_cast<size_t>(r->reused));
    } else {
      r->seq = std::make_unique<Sequence>(model_, *req.policies, req.on_notice);
    }
    r->sampler = std::make_unique<Sampler>(choice_sampling(req.sampling, 0));
    r->gen = std::make_unique<Generation>(model_, *r->seq, prompt, req.options, *r->sampler,
                                          text_of_choice(r->request, 0), token_of_choice(r->request, 0));
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      pool_.release(r->kv_bytes * static_cast<size_t>(req.n));
      running_count_ -= req.n;
      active_.erase(r->id);
    }
    end_unstarted(req, 0, ended("error", e.what()));
    return;
  }
  running_.push_back(std::move(r));
}

void Scheduler::fork_choices(Running& r, std::vector<std::unique_ptr<Running>>& out) {
  const std::shared_ptr<Request>& req = r.request;
  while (r.forks_pending > 0) {
    const int choice = req->n - r.forks_pending;
    --r.forks_pending;
    auto f = std::make_unique<Running>();
    f->id = r.id;
    f->choice = choice;
    f->request = req;
    f->kv_bytes = r.kv_bytes;
    f->reused = r.reused;
    try {
      f->seq = r.seq->fork(*req->policies, req->on_notice);
      f->sampler = std::make_unique<Sampler>(choice_sampling(req->sampling, choice));
      f->gen = std::make_unique<Generation>(*r.gen, *f->seq, *f->sampler, text_of_choice(req, choice),
                                            token_of_choice(req, choice));
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        pool_.release(f->kv_bytes);
        --running_count_;
      }
      if (req->on_done) req->on_done(choice, ended("error", e.what()));
      continue;
    }
    out.push_back(std::move(f));
  }
}

StepStats Scheduler::step() {
  admit();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Queued ones stay marked until admit() meets them.
    for (auto& r : running_)
      if (cancelled_.count(r->id)) r->gen->stop("cancelled");
    for (auto& r : running_) cancelled_.erase(r->id);
  }
  const auto now = std::chrono::steady_clock::now();
  for (auto& r : running_)
    if (now >= r->request->deadline) r->gen->stop("length");

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

  // The engine step: each sequence prunes before its own append (one that fails there, on
  // the context rule, ends with an error and leaves the step), one batched forward call.
  std::vector<StepItem> items;
  for (const Planned& p : plan)
    items.push_back({p.r->seq.get(), p.tokens, p.r->gen->logits_for(static_cast<int64_t>(p.tokens.size())), nullptr,
                     nullptr});
  const size_t ran = items.empty() ? 0 : step_.run(items);
  std::vector<std::unique_ptr<Running>> forked;
  for (size_t i = 0; i < items.size(); ++i) {
    Running& r = *plan[i].r;
    if (items[i].error) {
      try {
        std::rethrow_exception(items[i].error);
      } catch (const std::exception& e) {
        r.gen->fail_with(e.what());
      }
      continue;
    }
    const int64_t n = static_cast<int64_t>(items[i].tokens.size());
    const std::vector<float>& logits = step_.logits(i);
    // The prompt is in: the other choices start here, from the same logits.
    const bool prompt_done = r.gen->in_prefill() && n == static_cast<int64_t>(r.gen->pending().size());
    const size_t first_fork = forked.size();
    if (prompt_done && r.forks_pending > 0) fork_choices(r, forked);
    for (size_t f = first_fork; f < forked.size(); ++f) {
      try {
        forked[f]->gen->fed(n, logits);
      } catch (const std::exception& e) {
        forked[f]->gen->fail_with(e.what());
      }
    }
    try {
      r.gen->fed(n, logits);
    } catch (const std::exception& e) {
      r.gen->fail_with(e.what());
    }
  }
  st.sequences = static_cast<int>(ran);
  for (auto& f : forked) running_.push_back(std::move(f));

  size_t in_use = 0, cold = 0;
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->gen->done()) {
      finish(**it);
      it = running_.erase(it);
      ++st.finished;
    } else {
      in_use += (*it)->seq->cache().bytes_in_use() + (*it)->seq->cache().state_bytes();
      cold += (*it)->seq->cache().cold().bytes();
      ++it;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);  // drop_kept may change kept_ from another thread
  for (const auto& k : kept_) {
    in_use += k->seq->cache().bytes_in_use() + k->seq->cache().state_bytes();
    cold += k->seq->cache().cold().bytes();
  }
  in_use_ = in_use;
  cold_in_use_ = cold;
  return st;
}

void Scheduler::finish(Running& r) {
  GenerateResult result = r.gen->result();
  result.reused_tokens = r.reused;
  const Request& req = *r.request;
  // Choices that were never forked (the request ended in its prefill) end as it did.
  const int unforked = r.forks_pending;
  const bool last_choice = [&] {
    for (const auto& o : running_)
      if (o.get() != &r && o->id == r.id && !o->gen->done()) return false;
    return true;
  }();
  const bool keep_it = options_.reuse_slots > 0 && (result.finish_reason == "stop" || result.finish_reason == "length");
  {
    std::lock_guard<std::mutex> lock(mu_);
    pool_.release(r.kv_bytes * static_cast<size_t>(unforked) + (keep_it ? 0 : r.kv_bytes));
    running_count_ -= 1 + unforked;
    if (last_choice) active_.erase(r.id);
  }
  if (req.on_done) req.on_done(r.choice, result);
  if (unforked > 0) end_unstarted(req, req.n - unforked, result);
  r.forks_pending = 0;
  if (keep_it) keep(std::move(r.seq), req, r.kv_bytes);
}

void Scheduler::keep(std::unique_ptr<Sequence> seq, const Request& request, size_t kv_bytes) {
  // Its reservation is still counted in the pool.
  seq->set_notices(nullptr);  // the request it reported to is over
  auto k = std::make_unique<Kept>();
  k->seq = std::move(seq);
  k->settings = request.policies->settings();
  k->kv_bytes = kv_bytes;
  std::unique_ptr<Kept> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  kept_.push_back(std::move(k));
  pool_.keep(kv_bytes);
  ++kept_count_;
  if (static_cast<int>(kept_.size()) > options_.reuse_slots) {
    dropped = drop_kept_at(0);
  }
}

std::unique_ptr<Scheduler::Kept> Scheduler::drop_kept_at(size_t i) {
  std::unique_ptr<Kept> k = std::move(kept_[i]);
  kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
  pool_.unkeep(k->kv_bytes);
  pool_.release(k->kv_bytes);
  --kept_count_;
  return k;
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
  return pool_.reserved();
}

size_t Scheduler::kv_bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

size_t Scheduler::kv_cold_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cold_in_use_;
}

int Scheduler::kept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_count_;
}

size_t Scheduler::kv_kept_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_.kept();
}

}  // namespace triattn
