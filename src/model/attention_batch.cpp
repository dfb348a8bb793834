#include "model/attention_batch.h"

#include <algorithm>

#include "ops/attention.h"

namespace triattn {

namespace {

// The queries (and outputs, positions, sinks) of one KV head's group for a run of tokens.
struct Group {
  std::vector<const float*> qs;
  std::vector<float*> outs;
  std::vector<int32_t> qpos;
  std::vector<float> qsink;
  int n() const { return static_cast<int>(qs.size()); }
};

struct Run {
  int64_t t0, t1;  // tokens [t0, t1) of one item
  int kvh;
};

}  // namespace

void BatchedAttention::run(const AttentionLayer& a, const AttentionTokens& b, const float* q, float* out,
                           ThreadPool* pool) {
  const int l = a.layer, d = a.head_dim;
  const int group = a.n_heads / a.n_kv_heads;
  const int64_t Q = static_cast<int64_t>(a.n_heads) * d;
  auto stream = [&](int64_t t, int kvh, const float* query_sinks) {
    const KvCache& cache = *b.items[b.owner[t]].cache;
    return AttentionStream{cache.shape().type, cache.keys(l, kvh), cache.values(l, kvh), cache.positions(l, kvh),
                           cache.size(l, kvh), d, a.window, a.softcap, query_sinks, cache.max_position(l, kvh),
                           group <= 2 ? 2 : 1};
  };
  // In this thread's lists: runs on several threads gather at once.
  auto gather = [&](int64_t t0, int64_t t1, int kvh) -> const Group& {
    thread_local Group g;
    g.qs.clear();
    g.outs.clear();
    g.qpos.clear();
    g.qsink.clear();
    for (int64_t t = t0; t < t1; ++t)
      for (int j = 0; j < group; ++j) {
        const int64_t h = static_cast<int64_t>(kvh) * group + j;
        g.qs.push_back(&q[t * Q + h * d]);
        g.outs.push_back(&out[t * Q + h * d]);
        g.qpos.push_back(b.pos[t]);
        if (a.sinks) g.qsink.push_back(a.sinks[h]);
      }
    return g;
  };
  auto group_stream = [&](int64_t t0, int kvh, const Group& g) {
    return stream(t0, kvh, a.sinks ? g.qsink.data() : nullptr);
  };
  auto attend_run = [&](int64_t t0, int64_t t1, int kvh, float* weights) {
    const Group& g = gather(t0, t1, kvh);
    attend(g.qs.data(), g.qpos.data(), g.n(), group_stream(t0, kvh, g), a.scale, g.outs.data(), weights);
  };

  // Enough tokens per run that a block of keys serves ~16 queries from L1. An item whose
  // observer wants attention weights goes one token a run, each run with its weights.
  const int64_t run_tokens = std::max(1, 16 / group);
  std::vector<Run> runs, weighed;
  for (int64_t t0 = 0, i = 0; i < static_cast<int64_t>(b.items.size()); ++i) {
    const ForwardItem& it = b.items[i];
    const int64_t n = static_cast<int64_t>(it.tokens.size());
    const unsigned wants = it.observer ? it.observer->wants() : ForwardObserver::kNothing;
    if (wants & ForwardObserver::kAttention) {
      for (int64_t t = t0; t < t0 + n; ++t)
        for (int kvh = 0; kvh < a.n_kv_heads; ++kvh) weighed.push_back({t, t + 1, kvh});
    } else {
      for (int64_t s = t0; s < t0 + n; s += run_tokens)
        for (int kvh = 0; kvh < a.n_kv_heads; ++kvh) runs.push_back({s, std::min(t0 + n, s + run_tokens), kvh});
    }
    t0 += n;
  }
  // The runs without weights: whole runs on the threads, or chunk by chunk.
  auto attend_runs = [&] {
    if (runs.empty()) return;
    // Decode steps (one token per run) and steps with fewer runs than threads go chunk by
    // chunk: the pieces of work are then the chunks of every run's stream, so few runs still
    // use every thread, and finer pieces balance the threads. Prefill runs are many already,
    // and their chunks' results would take megabytes.
    const int threads = pool ? pool->size() : 1;
    const bool decode = std::all_of(runs.begin(), runs.end(), [](const Run& r) { return r.t1 - r.t0 == 1; });
    if (static_cast<int64_t>(runs.size()) >= threads && !decode) {
      parallel_for_dynamic(
          pool, static_cast<int64_t>(runs.size()),
          [&](int64_t lo, int64_t hi, int) {
            for (int64_t r = lo; r < hi; ++r) attend_run(runs[r].t0, runs[r].t1, runs[r].kvh, nullptr);
          },
          1);
      return;
    }
    // The chunks' results are merged per run after; attend() goes through the same chunks in
    // turn, so the outputs are the same either way.
    struct Piece {
      int64_t run, chunk;
      size_t at;  // its partial result in partials_
    };
    auto chunks_of = [&](const Run& r) { return attention_chunks(b.items[b.owner[r.t0]].cache->size(l, r.kvh)); };
    std::vector<Piece> pieces;
    std::vector<size_t> run_at(runs.size());
    size_t floats = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
      const int n_q = static_cast<int>((runs[r].t1 - runs[r].t0) * group);
      run_at[r] = floats;
      for (int64_t c = 0; c < chunks_of(runs[r]); ++c) {
        pieces.push_back({static_cast<int64_t>(r), c, floats});
        floats += attention_partial_floats(n_q, d);
      }
    }
    partials_.resize(floats);
    parallel_for_dynamic(
        pool, static_cast<int64_t>(pieces.size()),
        [&](int64_t lo, int64_t hi, int) {
          for (int64_t i = lo; i < hi; ++i) {
            const Run& r = runs[static_cast<size_t>(pieces[i].run)];
            const Group& g = gather(r.t0, r.t1, r.kvh);
            attend_chunk(g.qs.data(), g.qpos.data(), g.n(), group_stream(r.t0, r.kvh, g), pieces[i].chunk, a.scale,
                         partials_.data() + pieces[i].at);
          }
        },
        1);
    for (size_t r = 0; r < runs.size(); ++r) {
      const Group& g = gather(runs[r].t0, runs[r].t1, runs[r].kvh);
      merge_attention_chunks(g.n(), d, chunks_of(runs[r]), partials_.data() + run_at[r], g.outs.data());
    }
  };

  // The observers hear of each token's query heads in order (its query, then its weights),
  // after the runs computed them on every thread, in batches that bound the weights' memory.
  auto report = [&](int64_t t, int kvh, const float* weights) {
    ForwardObserver* obs = b.items[b.owner[t]].observer;
    const int64_t nk = b.items[b.owner[t]].cache->size(l, kvh);
    const bool want_q = obs->wants() & ForwardObserver::kQueries;
    for (int g = 0; g < group; ++g) {
      const int h = kvh * group + g;
      if (want_q) obs->on_query(l, h, b.pos[t], &q[t * Q + static_cast<int64_t>(h) * d]);
      if (weights) obs->on_attention(l, h, weights + static_cast<int64_t>(g) * nk, nk);
    }
  };
  constexpr size_t kMaxWeightFloats = size_t{8} << 20;
  for (size_t w0 = 0; w0 < weighed.size();) {
    std::vector<size_t> at;
    size_t floats = 0, w1 = w0;
    for (; w1 < weighed.size() && (w1 == w0 || floats < kMaxWeightFloats); ++w1) {
      at.push_back(floats);
      floats += static_cast<size_t>(group * b.items[b.owner[weighed[w1].t0]].cache->size(l, weighed[w1].kvh));
    }
    weights_.resize(floats);
    parallel_for_dynamic(
        pool, static_cast<int64_t>(w1 - w0),
        [&](int64_t lo, int64_t hi, int) {
          for (int64_t r = lo; r < hi; ++r) {
            const Run& run = weighed[w0 + static_cast<size_t>(r)];
            attend_run(run.t0, run.t1, run.kvh, weights_.data() + at[static_cast<size_t>(r)]);
          }
        },
        1);
    for (size_t r = w0; r < w1; ++r) report(weighed[r].t0, weighed[r].kvh, weights_.data() + at[r - w0]);
    w0 = w1;
  }
  attend_runs();
  // Observers of queries alone hear of them now, in the same order.
  for (int64_t t0 = 0, i = 0; i < static_cast<int64_t>(b.items.size()); ++i) {
    const ForwardItem& it = b.items[i];
    const int64_t n = static_cast<int64_t>(it.tokens.size());
    if (it.observer && it.observer->wants() == ForwardObserver::kQueries)
      for (int64_t t = t0; t < t0 + n; ++t)
        for (int kvh = 0; kvh < a.n_kv_heads; ++kvh) report(t, kvh, nullptr);
    t0 += n;
  }
}

}  // namespace triattn
