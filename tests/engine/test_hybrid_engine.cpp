// A hybrid model (tiny-qwen35: six Gated DeltaNet layers, two attention layers) through the
// engine: the scheduler batches its sequences, n choices fork the recurrent state with the
// KV rows, a kept conversation continues from its state, admission reserves the state beside
// the attention layers' rows, and the KV policies compress the attention layers only:
// TriAttention keeps every attention stream within B + beta, and with B above the sequence
// it changes nothing.
#include <gtest/gtest.h>

#include <map>

#include "common/temp_dir.h"
#include "engine/scheduler.h"
#include "engine_test_util.h"
#include "model/kv_shape.h"
#include "model/maker.h"

namespace triattn {
namespace {

class HybridEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const std::string path = dir_->file("tiny-qwen35.gguf");
    write_random_gguf(model_preset("tiny-qwen35"), MakerOptions{DType::F32, 21}, path);
    model_ = Model::load(path);
    pool_ = std::make_unique<ThreadPool>(2);
    full_ = std::make_unique<PolicyFactory>(*model_, KvSettings{});
  }
  static void TearDownTestSuite() {
    full_.reset();
    model_.reset();
    pool_.reset();
    delete dir_;
  }
  static std::vector<int32_t> prompt(int n, int salt) {
    std::vector<int32_t> p = {1};
    for (int i = 1; i < n; ++i) p.push_back(3 + (i * 37 + salt * 101) % 500);
    return p;
  }
  static Request request(std::vector<int32_t> p, int64_t n, const PolicyFactory& f,
                         std::map<int, GenerateResult>* out, int key) {
    Request r;
    r.prompt = std::move(p);
    r.options.n_predict = n;
    r.options.stop_at_eog = false;
    r.sampling.temperature = 0;
    r.policies = &f;
    r.on_done = [out, key](int choice, const GenerateResult& g) { (*out)[key + choice] = g; };
    return r;
  }
  static void drain(Scheduler& s) {
    while (s.running() > 0 || s.queued() > 0) s.step();
  }
  static GenerateResult alone(const std::vector<int32_t>& p, int64_t n, const PolicyFactory& f) {
    return test::greedy_run(*model_, f, p, n, pool_.get());
  }
  static KvSettings tri_settings(int64_t budget) {
    KvSettings t;
    t.policy = "triattention";
    t.params.budget = budget;
    t.params.divide_length = 8;
    t.params.window = 8;
    t.params.stats = test::calibrated_stats(*model_);
    return t;
  }
  static inline test::TempDir* dir_ = nullptr;
  static inline std::shared_ptr<const Model> model_;
  static inline std::unique_ptr<ThreadPool> pool_;
  static inline std::unique_ptr<PolicyFactory> full_;
};

TEST_F(HybridEngine, BatchedRequestsAndChoicesMatchRunningAlone) {
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.parallel = 4;
  Scheduler s(*model_, fwd, opt);
  std::map<int, GenerateResult> out;
  const std::vector<int32_t> a = prompt(50, 1), b = prompt(9, 2);
  s.submit(request(a, 30, *full_, &out, 0));
  Request two = request(b, 25, *full_, &out, 10);
  two.n = 2;  // forked after the prompt: both choices continue the same state
  s.submit(std::move(two));
  drain(s);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].tokens, alone(a, 30, *full_).tokens);
  const std::vector<int32_t> want_b = alone(b, 25, *full_).tokens;
  EXPECT_EQ(out[10].tokens, want_b);
  EXPECT_EQ(out[11].tokens, want_b);
}

TEST_F(HybridEngine, AKeptConversationContinuesFromItsState) {
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.reuse_slots = 1;
  Scheduler s(*model_, fwd, opt);
  std::map<int, GenerateResult> out;
  const std::vector<int32_t> p1 = prompt(40, 3);
  s.submit(request(p1, 20, *full_, &out, 0));
  drain(s);
  ASSERT_EQ(s.kept(), 1);
  std::vector<int32_t> p2 = p1;
  p2.insert(p2.end(), out[0].tokens.begin(), out[0].tokens.end());
  for (int i = 0; i < 7; ++i) p2.push_back(200 + i);
  s.submit(request(p2, 20, *full_, &out, 1));
  drain(s);
  EXPECT_EQ(out[1].reused_tokens, static_cast<int64_t>(p1.size() + out[0].tokens.size()) - 1);
  EXPECT_EQ(out[1].tokens, alone(p2, 20, *full_).tokens);
}

TEST_F(HybridEngine, AdmissionReservesTheAttentionRowsAndTheRecurrentState) {
  const ModelConfig& c = model_->config();
  Forward fwd(*model_, pool_.get());
  Scheduler s(*model_, fwd, SchedulerOptions{});
  std::map<int, GenerateResult> out;
  const Request r = request(prompt(30, 4), 10, *full_, &out, 0);
  // 40 tokens in each of the 2 attention layers' KV heads, K and V in f16, plus the state.
  const size_t rows = size_t{40} * 2 * c.n_kv_heads * 2 * row_bytes(DType::F16, c.head_dim);
  const size_t state = 6 * sizeof(float) * static_cast<size_t>(c.delta.conv_state_floats() + c.delta.state_floats());
  EXPECT_EQ(sequence_state_bytes(c), state);
  EXPECT_EQ(s.reservation_bytes(r), rows + state);
}

TEST_F(HybridEngine, TriAttentionCompressesTheAttentionLayersOnly) {
  const std::vector<int32_t> p = prompt(30, 5);
  const int64_t n = 120;
  // B above everything the sequence reaches: no pruning, the tokens of full attention.
  PolicyFactory roomy(*model_, tri_settings(512));
  const GenerateResult same = alone(p, n, roomy);
  EXPECT_EQ(same.stats.prune_events, 0);
  EXPECT_EQ(same.tokens, alone(p, n, *full_).tokens);
  // B = 24, beta = 8: every attention stream stays within 32 rows; DeltaNet layers hold none.
  PolicyFactory tight(*model_, tri_settings(24));
  const GenerateResult r = alone(p, n, tight);
  EXPECT_GT(r.stats.prune_events, 0);
  EXPECT_LE(r.stats.kv_peak_tokens, 24 + 8);
  EXPECT_EQ(static_cast<int64_t>(r.tokens.size()), n);
}

}  // namespace
}  // namespace triattn
