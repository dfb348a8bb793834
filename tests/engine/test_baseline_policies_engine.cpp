// The baseline KV policies through the real engine path (Sequence + generate + the forward
// pass's observations) on TinyStories-656K: identical to full attention when the budget
// covers the sequence, bounded memory and sane output when it does not, and the forward pass
// reporting what an observing policy asked for (positions, weights) as the policies expect.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "engine_test_util.h"
#include "model/forward.h"
#include "engine/policy_observer.h"

namespace triattn {
namespace {

const char* const kBaselines[] = {"streaming", "h2o", "snapkv", "rkv", "knorm", "tova", "random"};

class BaselineEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = Model::load(test::kTinyStories); }
  static void TearDownTestSuite() { model_.reset(); }
  static KvSettings baseline(const char* name, int64_t budget, int64_t beta, int64_t window) {
    KvSettings s;
    s.policy = name;
    s.params.budget = budget;
    s.params.divide_length = beta;
    s.params.window = window;
    return s;
  }
  std::vector<int32_t> prompt() const { return model_->tokenizer().encode("Once upon a time,", true); }
  static std::shared_ptr<const Model> model_;
};
std::shared_ptr<const Model> BaselineEngine::model_;

// With B at least the sequence length every policy equals full exactly (docs/design.md,
// Contracts; observing policies take the forward pass's serial observed path: same numbers).
TEST_F(BaselineEngine, BudgetCoveringTheSequenceIsIdenticalToFull) {
  ThreadPool pool(2);
  const int64_t n = 160;
  const auto full = test::greedy_generate(*model_, KvSettings{}, prompt(), n, &pool);
  const int64_t len = static_cast<int64_t>(prompt().size()) + n;
  for (const char* name : kBaselines) {
    const auto g = test::greedy_generate(*model_, baseline(name, len, 16, 8), prompt(), n, &pool);
    EXPECT_EQ(g.tokens, full.tokens) << name;
    EXPECT_EQ(g.stats.prune_events, 0) << name;
    EXPECT_EQ(g.stats.kv_peak_tokens, full.stats.kv_peak_tokens) << name;
  }
}

// A budget far below the sequence: every policy prunes on schedule, never holds more than
// B + β tokens per stream, and still writes tokens (a smoke run of each, figures printed).
TEST_F(BaselineEngine, SmallBudgetStaysBoundedAndRuns) {
  ThreadPool pool(2);
  const int64_t n = 300;
  const auto full = test::greedy_generate(*model_, KvSettings{}, prompt(), n, &pool);
  for (const char* name : kBaselines) {
    const auto g = test::greedy_generate(*model_, baseline(name, 64, 16, 16), prompt(), n, &pool);
    ASSERT_EQ(g.tokens.size(), static_cast<size_t>(n)) << name;
    EXPECT_LE(g.stats.kv_peak_tokens, 64 + 16) << name;
    EXPECT_GT(g.stats.prune_events, 10) << name;
    // g_i is sampled after feeding position P - 1 + i; the first cut comes before feeding
    // position B + β = 80, so g_0 .. g_{80-P} are computed on the full cache.
    EXPECT_GE(test::common_prefix(full.tokens, g.tokens), 81 - prompt().size()) << name;
    std::printf("[ %-9s ] B=64 beta=16 W=16: %.1f%% of %lld greedy tokens identical to full, first divergence at %zu\n",
                name, 100 * test::agreement(full.tokens, g.tokens), static_cast<long long>(n),
                test::common_prefix(full.tokens, g.tokens));
  }
}

// A prompt longer than B + β is prefilled in chunks of at most β and pruned between them.
TEST_F(BaselineEngine, LongPromptIsPrefilledInBoundedMemory) {
  ThreadPool pool(2);
  std::string text;
  for (int i = 0; i < 20; ++i) text += "Once upon a time, there was a little girl named Lily. She liked to play. ";
  const auto ids = model_->tokenizer().encode(text, true);
  ASSERT_GT(ids.size(), 2u * (48 + 16));
  for (const char* name : kBaselines) {
    const auto g = test::greedy_generate(*model_, baseline(name, 48, 16, 8), ids, 8, &pool);
    EXPECT_LE(g.stats.kv_peak_tokens, 48 + 16) << name;
    EXPECT_EQ(g.tokens.size(), 8u) << name;
  }
}

// The forward pass's side of the seam: a policy asking for queries and attention gets, for
// every token of a chunk and every query head of every layer, the token's position and
// softmax weights over the stream's rows (zero past the token's position, summing to 1).
class RecordingPolicy final : public KvPolicy {
 public:
  std::string_view name() const override { return "recording"; }
  unsigned needs() const override { return kNeedQueries | kNeedAttention; }
  std::optional<KeepPlan> plan_before_append(const KvCache&, int64_t, const SequenceInfo&, ThreadPool*) override {
    return std::nullopt;
  }
  void observe_query(int layer, int q_head, int32_t pos, const float* q) override {
    queries.push_back({layer, q_head, pos, std::isfinite(q[0])});
  }
  void observe_attention(int layer, int q_head, const float* w, int64_t n) override {
    std::vector<float> v(w, w + n);
    weights.push_back({layer, q_head, v});
  }
  struct Query {
    int layer, head;
    int32_t pos;
    bool finite;
  };
  struct Weights {
    int layer, head;
    std::vector<float> w;
  };
  std::vector<Query> queries;
  std::vector<Weights> weights;
};

TEST_F(BaselineEngine, ForwardReportsPositionsAndWeightsOfEveryToken) {
  const ModelConfig& c = model_->config();
  KvCache cache({c.n_layers, c.n_kv_heads, c.head_dim, DType::F32});
  Forward fwd(*model_, nullptr);
  RecordingPolicy rec;
  PolicyObserver observer(rec, nullptr, nullptr);  // as a sequence adapts its policy
  std::vector<std::vector<float>> logits;
  const std::vector<int32_t> chunk1 = {1, 400, 500, 600, 700}, chunk2 = {800};
  for (const auto* chunk : {&chunk1, &chunk2}) {
    ForwardItem item;
    item.cache = &cache;
    item.tokens = *chunk;
    item.observer = &observer;
    fwd.run(std::span<const ForwardItem>(&item, 1), logits);
  }
  const size_t per_token = static_cast<size_t>(c.n_layers) * c.n_heads;
  ASSERT_EQ(rec.queries.size(), 6 * per_token);
  ASSERT_EQ(rec.weights.size(), 6 * per_token);
  const int group = c.n_heads / c.n_kv_heads;
  for (size_t i = 0; i < rec.queries.size(); ++i) {
    const auto& q = rec.queries[i];
    const auto& w = rec.weights[i];
    EXPECT_TRUE(q.finite);
    EXPECT_EQ(q.layer, w.layer);
    EXPECT_EQ(q.head, w.head);
    // Per layer: the chunk's tokens in order, each token's heads in order.
    EXPECT_EQ(q.head, static_cast<int>(i % c.n_heads));
    const size_t chunk1_calls = 5 * per_token;
    const int32_t expect_pos =
        i < chunk1_calls ? static_cast<int32_t>((i % (5 * c.n_heads)) / c.n_heads) : 5;
    EXPECT_EQ(q.pos, expect_pos) << i;
    EXPECT_EQ(q.layer, static_cast<int>(i < chunk1_calls ? i / (5 * c.n_heads) : (i - chunk1_calls) / c.n_heads));
    EXPECT_EQ(w.w.size(), q.pos < 5 ? 5u : 6u);  // the whole chunk is appended before attention
    double sum = 0;
    for (size_t r = 0; r < w.w.size(); ++r) {
      if (static_cast<int32_t>(r) > q.pos) {
        EXPECT_EQ(w.w[r], 0.0f) << "row " << r << " after position " << q.pos;
      }
      sum += w.w[r];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_EQ(q.head / group, w.head / group);
  }
  // Positions: chunk 1 is 0..4 (each reported n_layers * n_heads times), chunk 2 is 5.
  std::vector<int> seen(6, 0);
  for (const auto& q : rec.queries) ++seen[q.pos];
  for (int p = 0; p < 6; ++p) EXPECT_EQ(seen[p], static_cast<int>(per_token)) << p;
}

}  // namespace
}  // namespace triattn
