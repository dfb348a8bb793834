// The baseline KV policies (streaming, h2o, snapkv, rkv, knorm, tova, random) against the
// independent numpy reference of their definitions, plus the registry's promises about them.
//
// How the keep sets are compared: tests/reference/policies_ref.py simulates each synthetic
// case (a sequence fed in chunks: prefill, then decode) and writes the expected keep sets of
// every pruning event to tests/data/policies_reference.json; this test replays the same case
// through the C++ policy, the way the engine drives one (plan_before_append before each chunk,
// KvCache::apply, append, then the observations the forward pass would report), and requires
// every event to match exactly. The fixture holds parameters, a seed and keep sets only: both
// sides rebuild the keys and queries from the seed with the same counter-based hash (values
// exact in float32), so the file stays small and readable, this test needs no Python, and the
// Python test (test_policies_reference.py) checks the committed fixture is what the reference
// produces. The other way round (C++ writing keep sets for Python to read) would make one
// test depend on another having run first.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error_of.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "kv/keep_set.h"
#include "kv/policies/recent_queries.h"
#include "kv/policy.h"
#include "ops/ops.h"

using namespace triattn;
using json = nlohmann::json;

namespace {

const char* const kBaselines[] = {"streaming", "h2o", "snapkv", "rkv", "knorm", "tova", "random"};
// The fixture also holds the policies with statistics that the reference can compute
// (triattention-split; the paper's triattention has its own reference test).
const char* const kFixturePolicies[] = {"streaming", "h2o",  "snapkv", "rkv",
                                        "knorm",     "tova", "random", "triattention-split"};

using triattn::test::error_of;

// --- the synthetic inputs, as policies_ref.py builds them -------------------------------------

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
uint64_t chain(uint64_t seed, std::initializer_list<uint64_t> values) {
  uint64_t h = splitmix64(seed);
  for (uint64_t v : values) h = splitmix64(h ^ v);
  return h;
}
float unit(uint64_t h) { return static_cast<float>(static_cast<double>(h >> 48) / 65536.0 * 2.0 - 1.0); }

struct Case {
  std::string name, policy;
  uint64_t seed = 0;
  int L = 0, Hkv = 0, G = 0, d = 0;
  float key_scale = 1, query_scale = 1;
  int clusters = 0;
  PolicyParams params;
  int64_t prompt_len = 0;
  std::vector<int64_t> chunks;
  json events;

  float key(int64_t t, int l, int h, int i) const {
    const float noise = unit(chain(seed, {1, uint64_t(t), uint64_t(l), uint64_t(h), uint64_t(i)}));
    if (!clusters) return key_scale * noise;
    const uint64_t c = chain(seed, {3, uint64_t(t)}) % static_cast<uint64_t>(clusters);
    return key_scale * (unit(chain(seed, {4, c, uint64_t(l), uint64_t(h), uint64_t(i)})) + 0.25f * noise);
  }
  float query(int64_t t, int l, int h, int i) const {
    return query_scale * unit(chain(seed, {2, uint64_t(t), uint64_t(l), uint64_t(h), uint64_t(i)}));
  }
  // triattention-split's statistics (policies_ref.py make_stats): q̄ within ±query_scale/2 per
  // coordinate, q_abs_mean in [query_scale, 2·query_scale], so above |q̄|.
  std::shared_ptr<const HeadStats> stats() const {
    auto s = std::make_shared<HeadStats>();
    const int H = Hkv * G, half = d / 2;
    s->n_layers = L, s->n_heads = H, s->n_kv_heads = Hkv, s->head_dim = d;
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h)
        for (int f = 0; f < half; ++f) {
          const uint64_t lh[] = {uint64_t(l), uint64_t(h), uint64_t(f)};
          s->q_mean_real.push_back(query_scale * 0.5f * unit(chain(seed, {5, lh[0], lh[1], lh[2], 0})));
          s->q_mean_imag.push_back(query_scale * 0.5f * unit(chain(seed, {5, lh[0], lh[1], lh[2], 1})));
          s->q_abs_mean.push_back(query_scale * (1.0f + std::fabs(unit(chain(seed, {6, lh[0], lh[1], lh[2]})))));
        }
    return s;
  }
  AttentionGeometry geometry() const {
    AttentionGeometry g;
    g.n_layers = L, g.n_heads = Hkv * G, g.n_kv_heads = Hkv, g.head_dim = d;
    for (int f = 0; f < d / 2; ++f) g.rope_freqs.push_back(1.0f / static_cast<float>(1 + f));
    return g;
  }
};

Case parse_case(const json& j) {
  Case c;
  c.name = j.at("name");
  c.policy = j.at("policy");
  c.seed = j.at("seed");
  const json& sh = j.at("shape");
  c.L = sh.at("n_layers"), c.Hkv = sh.at("n_kv_heads"), c.G = sh.at("group"), c.d = sh.at("head_dim");
  c.key_scale = j.at("key_scale"), c.query_scale = j.at("query_scale"), c.clusters = j.at("clusters");
  const json& p = j.at("params");
  c.params.budget = p.at("budget");
  c.params.divide_length = p.at("divide_length");
  c.params.window = p.at("window");
  if (!p.at("sink").is_null()) c.params.sink = p.at("sink").get<int64_t>();
  c.params.protect_prompt = p.at("protect_prompt");
  if (!p.at("mode").is_null()) c.params.mode = pruning_mode_from_name(p.at("mode").get<std::string>()).value();
  c.params.obs_window = p.at("obs_window");
  c.params.pool_kernel = p.at("pool_kernel");
  c.params.rkv_lambda = p.at("rkv_lambda");
  c.params.rkv_threshold = p.at("rkv_threshold");
  c.params.seed = p.at("seed");
  if (c.policy == "triattention-split") c.params.stats = c.stats();
  c.prompt_len = j.at("prompt_len");
  c.chunks = j.at("chunks").get<std::vector<int64_t>>();
  c.events = j.at("events");
  return c;
}

std::vector<Case> fixture_cases() {
  const std::string path = std::string(TRIATTN_SOURCE_DIR) + "/tests/data/policies_reference.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  const json doc = json::parse(in);  // named: a range-for over parse(in).at(...) reads a dead temporary
  std::vector<Case> cases;
  for (const json& j : doc.at("cases")) cases.push_back(parse_case(j));
  if (cases.size() < 40) throw std::runtime_error(path + " holds too few cases");
  return cases;
}

// The events of one replay: p and the kept positions of every stream.
struct Event {
  int64_t p = 0;
  std::vector<std::vector<int32_t>> keep;
};

// How replay() stores the keys: in an F32 cache as they are, in a Q8_0 cache, or in an F32
// cache after a round trip through Q8_0 (the values a Q8_0 cache holds, as floats).
enum class Keys { F32, Q8_0, F32ThroughQ8_0 };

// Replays `c` through the policy as Sequence + Forward drive one (forward.cpp: per layer,
// the chunk is appended, then each token's query heads are observed in order).
std::vector<Event> replay(const Case& c, ThreadPool* pool, Keys stored = Keys::F32) {
  auto policy = make_kv_policy(c.policy, c.params, c.geometry());
  const unsigned needs = policy->needs();
  KvCache cache({c.L, c.Hkv, c.d, stored == Keys::Q8_0 ? DType::Q8_0 : DType::F32});
  std::vector<uint8_t> q8(stored == Keys::F32 ? 0 : row_bytes(DType::Q8_0, c.d));
  std::vector<float> krow(static_cast<size_t>(c.d));
  const SequenceInfo seq{c.prompt_len};
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  std::vector<Event> events;
  std::vector<float> k(static_cast<size_t>(c.Hkv) * c.d), v(k.size(), 0.0f), q(c.d), w;
  int64_t p = 0;
  for (int64_t n : c.chunks) {
    EXPECT_LE(n, policy->max_append()) << c.name;
    if (auto plan = policy->plan_before_append(cache, n, seq, pool)) {
      cache.apply(*plan);
      Event e{p, {}};
      for (int l = 0; l < c.L; ++l)
        for (int h = 0; h < c.Hkv; ++h) {
          const auto pos = stream_positions(cache, l, h);
          e.keep.emplace_back(pos.begin(), pos.end());
        }
      events.push_back(std::move(e));
    }
    for (int l = 0; l < c.L; ++l) {
      for (int64_t t = p; t < p + n; ++t) {
        for (int h = 0; h < c.Hkv; ++h) {
          float* kh = &k[static_cast<size_t>(h) * c.d];
          for (int i = 0; i < c.d; ++i) kh[i] = c.key(t, l, h, i);
          if (stored == Keys::F32ThroughQ8_0) {
            ops::quantize_row(DType::Q8_0, kh, q8.data(), c.d);
            ops::dequantize_row(DType::Q8_0, q8.data(), kh, c.d);
          }
        }
        cache.append(l, static_cast<int32_t>(t), k.data(), v.data());
      }
      for (int64_t t = p; t < p + n; ++t)
        for (int kvh = 0; kvh < c.Hkv; ++kvh)
          for (int g = 0; g < c.G; ++g) {
            const int qh = kvh * c.G + g;
            for (int i = 0; i < c.d; ++i) q[i] = c.query(t, l, qh, i);
            if (needs & kNeedQueries) policy->observe_query(l, qh, static_cast<int32_t>(t), q.data());
            if (!(needs & kNeedAttention)) continue;
            // The forward pass's weights: softmax over the stream's rows up to position t.
            const int64_t nk = cache.size(l, kvh);
            const auto* keys = static_cast<const uint8_t*>(cache.keys(l, kvh));
            const int32_t* pos = cache.positions(l, kvh);
            std::vector<double> logit(nk, -INFINITY);
            double mx = -INFINITY, z = 0;
            for (int64_t r = 0; r < nk; ++r) {
              if (pos[r] > t) continue;
              ops::dequantize_row(cache.shape().type, keys + r * cache.row_bytes(), krow.data(), c.d);
              double dot = 0;
              for (int i = 0; i < c.d; ++i) dot += static_cast<double>(q[i]) * krow[i];
              logit[r] = scale * dot;
              mx = std::max(mx, logit[r]);
            }
            for (int64_t r = 0; r < nk; ++r)
              if (pos[r] <= t) z += std::exp(logit[r] - mx);
            w.assign(nk, 0.0f);
            for (int64_t r = 0; r < nk; ++r)
              if (pos[r] <= t) w[r] = static_cast<float>(std::exp(logit[r] - mx) / z);
            policy->observe_attention(l, qh, w.data(), nk);
          }
    }
    cache.advance(n);
    p += n;
  }
  return events;
}

std::string describe(const std::vector<int32_t>& v) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << v[i];
  return s.str();
}

void expect_matches_reference(const Case& c, ThreadPool* pool) {
  const std::vector<Event> got = replay(c, pool);
  ASSERT_EQ(got.size(), c.events.size()) << c.name << ": number of pruning events";
  for (size_t e = 0; e < got.size(); ++e) {
    const json& want = c.events[e];
    EXPECT_EQ(got[e].p, want.at("p").get<int64_t>()) << c.name << " event " << e;
    const auto keep = want.at("keep").get<std::vector<std::vector<int32_t>>>();
    ASSERT_EQ(got[e].keep.size(), keep.size()) << c.name;
    for (size_t s = 0; s < keep.size(); ++s)
      EXPECT_EQ(got[e].keep[s], keep[s]) << c.name << " event " << e << " (p=" << got[e].p << ") stream " << s
                                         << ": kept " << describe(got[e].keep[s]) << ", reference "
                                         << describe(keep[s]);
  }
}

}  // namespace

// --- keep sets against the numpy reference -----------------------------------------------

TEST(BaselinePolicies, KeepSetsEqualTheNumpyReference) {
  const std::vector<Case> cases = fixture_cases();
  std::set<std::string> policies;
  std::set<int> groups;
  std::set<std::string> modes;
  for (const Case& c : cases) {
    policies.insert(c.policy);
    groups.insert(c.G);
    modes.insert(std::string(pruning_mode_name(c.params.mode)));
    SCOPED_TRACE(c.name);
    expect_matches_reference(c, nullptr);
  }
  // The fixture covers every baseline, GQA groups 1..4 and every mode (a fixture shrunk by
  // mistake fails here rather than passing on nothing).
  for (const char* b : kFixturePolicies) EXPECT_TRUE(policies.count(b)) << b;
  EXPECT_GE(groups.size(), 3u);
  EXPECT_GE(modes.size(), 4u);  // default, per_head, per_layer, global
}

// A Q8_0 cache is scored by the values it holds: every policy that reads keys (and those
// that do not) keeps, event for event, what it keeps from an F32 cache holding the same keys
// rounded through Q8_0. The fixture's cases at head_dim 32 (one Q8_0 block), and the paper's
// triattention on the statistics of the split cases.
TEST(BaselinePolicies, Q8_0CacheKeepsWhatItsDequantizedKeysKeep) {
  std::set<std::string> policies;
  int64_t events = 0;
  for (Case c : fixture_cases()) {
    c.d = 32;
    if (c.params.stats) c.params.stats = c.stats();  // at the new head_dim
    std::vector<Case> runs = {c};
    if (c.policy == "triattention-split") {
      runs.push_back(c);
      runs.back().policy = "triattention";
    }
    for (const Case& r : runs) {
      SCOPED_TRACE(r.name + " as " + r.policy);
      const std::vector<Event> a = replay(r, nullptr, Keys::Q8_0), b = replay(r, nullptr, Keys::F32ThroughQ8_0);
      ASSERT_EQ(a.size(), b.size());
      for (size_t e = 0; e < a.size(); ++e) {
        EXPECT_EQ(a[e].p, b[e].p);
        EXPECT_EQ(a[e].keep, b[e].keep) << "event " << e;
      }
      events += static_cast<int64_t>(a.size());
      policies.insert(r.policy);
    }
  }
  for (const char* b : kFixturePolicies) EXPECT_TRUE(policies.count(b)) << b;
  EXPECT_TRUE(policies.count("triattention"));
  EXPECT_GT(events, 100);
}

// triattention-split rescues prompt keys only: with no prompt it keeps what the paper's
// algorithm (triattention, per_head) keeps, event for event, whatever the pruning mode asked.
TEST(BaselinePolicies, SplitWithoutAPromptKeepsWhatTriAttentionKeeps) {
  int compared = 0;
  for (const Case& base : fixture_cases()) {
    if (base.policy != "triattention-split") continue;
    SCOPED_TRACE(base.name);
    Case split = base, paper = base;
    split.prompt_len = paper.prompt_len = 0;
    split.params.protect_prompt = paper.params.protect_prompt = false;
    paper.policy = "triattention";
    paper.params.mode = PruningMode::PerHead;
    const std::vector<Event> a = replay(split, nullptr), b = replay(paper, nullptr);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    for (size_t e = 0; e < a.size(); ++e) {
      EXPECT_EQ(a[e].p, b[e].p);
      EXPECT_EQ(a[e].keep, b[e].keep) << "event " << e;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 6);
}

// Streams are scored on the pool's threads: the keep sets do not depend on it.
TEST(BaselinePolicies, KeepSetsDoNotDependOnTheThreadCount) {
  ThreadPool pool(3);
  for (const Case& c : fixture_cases()) {
    SCOPED_TRACE(c.name);
    expect_matches_reference(c, &pool);
  }
}

// --- the rules every baseline shares ---------------------------------------------------------

TEST(BaselinePolicies, BudgetCoveringTheSequenceNeverPrunes) {
  for (Case c : fixture_cases()) {
    int64_t total = 0;
    for (int64_t n : c.chunks) total += n;
    c.params.budget = total;
    c.events = json::array();
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(replay(c, nullptr).empty());
  }
}

TEST(BaselinePolicies, EveryPruningEventCutsBackToTheBudget) {
  for (const Case& c : fixture_cases())
    for (const json& e : c.events)
      for (const auto& keep : e.at("keep").get<std::vector<std::vector<int32_t>>>()) {
        // Protected tokens only outgrow B with --protect-prompt.
        if (!c.params.protect_prompt) {
          EXPECT_EQ(static_cast<int64_t>(keep.size()), c.params.budget) << c.name;
        }
      }
}

TEST(BaselinePolicies, ChunksAndMemoryBoundFollowTheTrigger) {
  AttentionGeometry g;
  g.n_layers = 1, g.n_heads = 2, g.n_kv_heads = 1, g.head_dim = 4;
  PolicyParams p;
  p.budget = 64, p.divide_length = 16, p.window = 8;
  for (const char* name : kBaselines) {
    auto policy = make_kv_policy(name, p, g);
    EXPECT_EQ(policy->max_append(), 16) << name;
    EXPECT_EQ(policy->memory_bound(SequenceInfo{}), 64 + 16) << name;
    // A protected prompt longer than B raises the bound instead of pruning at every step.
    PolicyParams pp = p;
    pp.protect_prompt = true;
    EXPECT_EQ(make_kv_policy(name, pp, g)->memory_bound(SequenceInfo{100}), 100 + 8 + 16) << name;
  }
}

TEST(BaselinePolicies, StreamingKeepsSinksAndTheMostRecentWhateverTheMode) {
  AttentionGeometry g;
  g.n_layers = 2, g.n_heads = 2, g.n_kv_heads = 2, g.head_dim = 2;
  KvCache cache({2, 2, 2, DType::F32});
  const float k[4] = {1, 2, 3, 4}, v[4] = {};
  for (int t = 0; t < 20; ++t)
    for (int l = 0; l < 2; ++l) cache.append(l, t, k, v);
  cache.advance(20);
  PolicyParams p;
  p.budget = 10, p.divide_length = 4, p.window = 2;  // sink unset: streaming's 4
  const std::vector<int32_t> expect = {0, 1, 2, 3, 14, 15, 16, 17, 18, 19};
  for (auto mode : {PruningMode::PerHead, PruningMode::PerLayerPerHead, PruningMode::PerLayer, PruningMode::Global}) {
    p.mode = mode;
    auto plan = make_kv_policy("streaming", p, g)->plan_before_append(cache, 1, {}, nullptr);
    ASSERT_TRUE(plan);
    for (const auto& keep : plan->keep) EXPECT_EQ(keep, expect) << pruning_mode_name(mode);
  }
}

// `triattn bench` fills caches without the forward pass: an observing policy then has no
// observations for those rows and must still produce a valid plan (rows count as unattended).
TEST(BaselinePolicies, ObservingPoliciesPruneACacheTheyNeverObserved) {
  AttentionGeometry g;
  g.n_layers = 1, g.n_heads = 2, g.n_kv_heads = 1, g.head_dim = 4;
  KvCache cache({1, 1, 4, DType::F16});
  for (int t = 0; t < 30; ++t) {
    const float k[4] = {static_cast<float>(t % 7), 1, -1, 0.5f}, v[4] = {};
    cache.append(0, t, k, v);
  }
  cache.advance(30);
  PolicyParams p;
  p.budget = 12, p.divide_length = 4, p.window = 3;
  for (const char* name : kBaselines) {
    auto plan = make_kv_policy(name, p, g)->plan_before_append(cache, 1, {}, nullptr);
    ASSERT_TRUE(plan) << name;
    EXPECT_EQ(plan->keep[0].size(), 12u) << name;
    EXPECT_EQ(plan->keep[0].back(), 29) << name;  // the window
  }
}

// --- the registry ------------------------------------------------------------------------------

TEST(BaselinePolicies, RegistryDeclaresWhatEachNeedsAndItsDefaults) {
  AttentionGeometry g;
  g.n_layers = 1, g.n_heads = 2, g.n_kv_heads = 1, g.head_dim = 4;
  g.rope_freqs = {1.0f, 0.1f};
  for (const char* name : kBaselines) {
    const PolicyInfo* info = find_kv_policy(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_TRUE(info->prunes) << name;
    EXPECT_FALSE(info->needs_stats) << name;
    EXPECT_EQ(make_kv_policy(name, PolicyParams{}, g)->needs(), info->needs) << name;
    EXPECT_EQ(make_kv_policy(name, PolicyParams{}, g)->name(), name);
    const PolicyParams r = resolve_policy_params(name, PolicyParams{});
    EXPECT_EQ(r.mode, PruningMode::PerLayerPerHead) << name;  // as published
    EXPECT_EQ(r.sink, std::string(name) == "streaming" ? 4 : 0) << name;
  }
  // Only the policies that read observations ask for them (the others cost nothing).
  EXPECT_EQ(find_kv_policy("h2o")->needs, kNeedAttention);
  for (const char* n : {"snapkv", "rkv", "tova"}) EXPECT_EQ(find_kv_policy(n)->needs, kNeedQueries) << n;
  for (const char* n : {"streaming", "knorm", "random", "full", "triattention"})
    EXPECT_EQ(find_kv_policy(n)->needs, kNeedNothing) << n;
  EXPECT_EQ(resolve_policy_params("triattention", PolicyParams{}).mode, PruningMode::PerHead);
  EXPECT_FALSE(find_kv_policy("full")->mode_applies);
  EXPECT_FALSE(find_kv_policy("streaming")->mode_applies);
  // A mode or sink that was set is kept.
  PolicyParams set;
  set.mode = PruningMode::Global;
  set.sink = 0;
  EXPECT_EQ(resolve_policy_params("streaming", set).sink, 0);
  EXPECT_EQ(resolve_policy_params("snapkv", set).mode, PruningMode::Global);
  // Each policy's own parameters are listed with their defaults.
  const auto flags = [](const char* n) {
    std::set<std::string> s;
    for (const auto& p : find_kv_policy(n)->params) s.insert(p.flag + "=" + p.default_value);
    return s;
  };
  EXPECT_EQ(flags("snapkv"), (std::set<std::string>{"--obs-window=32", "--pool-kernel=7"}));
  EXPECT_EQ(flags("rkv"),
            (std::set<std::string>{"--obs-window=32", "--pool-kernel=7", "--rkv-lambda=0.1", "--rkv-threshold=0.5"}));
  EXPECT_EQ(flags("random"), (std::set<std::string>{"--kv-seed=0"}));
  EXPECT_EQ(find_kv_policy("h3o"), nullptr);
  // triattention-split: statistics, nothing observed at run time; it shares the paper's ranking
  // across layers itself and selects per stream, so --pruning-mode does not apply.
  const PolicyInfo* split = find_kv_policy("triattention-split");
  ASSERT_NE(split, nullptr);
  EXPECT_TRUE(split->needs_stats);
  EXPECT_EQ(split->needs, kNeedNothing);
  EXPECT_FALSE(split->mode_applies);
  EXPECT_EQ(resolve_policy_params("triattention-split", PolicyParams{}).mode, PruningMode::PerLayerPerHead);
  EXPECT_EQ(flags("triattention-split"), (std::set<std::string>{"--pool-kernel=7"}));
}

TEST(BaselinePolicies, BadParametersGetClearErrors) {
  AttentionGeometry g;
  g.n_layers = 1, g.n_heads = 2, g.n_kv_heads = 1, g.head_dim = 4;
  struct Bad {
    const char* policy;
    std::function<void(PolicyParams&)> set;
    std::vector<std::string> says;
  };
  const std::vector<Bad> bad = {
      {"snapkv", [](PolicyParams& p) { p.obs_window = 0; }, {"--obs-window", "snapkv", "got 0"}},
      {"rkv", [](PolicyParams& p) { p.obs_window = 1 << 20; }, {"--obs-window", "rkv"}},
      {"snapkv", [](PolicyParams& p) { p.pool_kernel = 4; }, {"--pool-kernel", "odd", "got 4"}},
      {"rkv", [](PolicyParams& p) { p.pool_kernel = -1; }, {"--pool-kernel"}},
      {"triattention-split", [](PolicyParams& p) { p.pool_kernel = 8; }, {"--pool-kernel", "triattention-split", "got 8"}},
      {"rkv", [](PolicyParams& p) { p.rkv_lambda = 1.5; }, {"--rkv-lambda", "between 0", "1.5"}},
      {"rkv", [](PolicyParams& p) { p.rkv_lambda = std::nan(""); }, {"--rkv-lambda"}},
      {"rkv", [](PolicyParams& p) { p.rkv_threshold = -2; }, {"--rkv-threshold", "cosine"}},
      {"h2o", [](PolicyParams& p) { p.budget = 0; }, {"--kv-budget"}},
      {"tova", [](PolicyParams& p) { p.divide_length = 0; }, {"--divide-length"}},
      {"knorm", [](PolicyParams& p) { p.window = -1; }, {"--window"}},
      // streaming's default 4 sinks need a budget above 4
      {"streaming", [](PolicyParams& p) { p.budget = 4; }, {"--sink", "4", "--kv-budget"}},
      {"random", [](PolicyParams& p) { p.sink = 9; p.budget = 9; }, {"--sink"}},
  };
  for (const Bad& b : bad) {
    PolicyParams p;
    b.set(p);
    const std::string msg = error_of([&] { make_kv_policy(b.policy, p, g); });
    ASSERT_FALSE(msg.empty()) << b.policy << " accepted a bad parameter";
    for (const std::string& s : b.says) EXPECT_NE(msg.find(s), std::string::npos) << b.policy << ": " << msg;
  }
  // A knob only some policies read is not checked for the others.
  PolicyParams p;
  p.rkv_lambda = 7;
  p.pool_kernel = 2;
  EXPECT_NO_THROW(make_kv_policy("h2o", p, g));
  EXPECT_NO_THROW(make_kv_policy("full", p, g));
}

// --- the helpers the window-attention policies share ------------------------------------------

TEST(BaselinePolicies, MaxPoolIsCentredAndClipped) {
  const std::vector<double> x = {1, 5, 2, 0, 0, 0, 3, 1};
  EXPECT_EQ(max_pool_centered(x, 1), x);
  EXPECT_EQ(max_pool_centered(x, 3), (std::vector<double>{5, 5, 5, 2, 0, 3, 3, 3}));
  EXPECT_EQ(max_pool_centered(x, 7), (std::vector<double>{5, 5, 5, 5, 5, 3, 3, 3}));
  EXPECT_EQ(max_pool_centered({}, 7), std::vector<double>{});
}

TEST(BaselinePolicies, RecentQueriesKeepTheLastWInOrder) {
  AttentionGeometry g;
  g.n_layers = 2, g.n_heads = 2, g.n_kv_heads = 1, g.head_dim = 2;
  RecentQueries rq(g, 3);
  for (int t = 0; t < 5; ++t) {
    const float q[2] = {static_cast<float>(t), static_cast<float>(-t)};
    rq.push(1, 0, 100 + t, q);
  }
  EXPECT_EQ(rq.count(1, 0), 3);
  EXPECT_EQ(rq.count(0, 0), 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(rq.position(1, 0, i), 102 + i);
    EXPECT_EQ(rq.query(1, 0, i)[0], 2.0f + i);
  }
  EXPECT_EQ(rq.group(), 2);
}
