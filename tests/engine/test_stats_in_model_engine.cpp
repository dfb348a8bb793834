// TriAttention with the statistics the model carries (calibrate --into) decides exactly as
// with the same statistics given as --stats: the same greedy tokens, prune events, KV peak
// and final keep sets, for a GGUF with triattention.* tensors and for an HF directory with
// triattention.safetensors. And --stats still wins over the model's own, with a note.
#include <gtest/gtest.h>

#include <filesystem>

#include "calib/stats_into.h"
#include "common/temp_dir.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "engine_test_util.h"
#include "formats/stats_names.h"

namespace stats_in_model_engine_test {

using namespace triattn;

struct Outcome {
  std::vector<int32_t> tokens;
  RunStats stats;
  std::vector<std::vector<int32_t>> keep;  // every (layer, KV head) stream's kept positions
  std::vector<std::string> warnings;
};

Outcome run_triattention(const Model& m, const std::string& stats_path) {
  KvSettings kv;
  kv.policy = "triattention";
  kv.params.budget = 32;
  kv.params.divide_length = 8;
  kv.params.window = 8;
  kv.stats_path = stats_path;
  const PolicyFactory policies(m, kv);
  ThreadPool pool(2);
  Forward forward(m, &pool);
  Sequence seq(m, policies);
  SamplerParams sp;
  sp.temperature = 0;
  Sampler sampler(sp);
  GenerateOptions opt;
  opt.n_predict = 100;
  opt.stop_at_eog = false;
  const Tokenizer& tok = m.tokenizer();
  const auto prompt = tok.encode("Once upon a time, there was a little dog named Max. He liked to", tok.add_bos_default());
  const GenerateResult r = generate(m, forward, seq, prompt, opt, sampler);
  Outcome o{r.tokens, r.stats, {}, policies.warnings()};
  const KvCache& cache = seq.cache();
  for (int l = 0; l < cache.shape().n_layers; ++l)
    for (int h = 0; h < cache.shape().n_kv_heads; ++h)
      o.keep.emplace_back(cache.positions(l, h), cache.positions(l, h) + cache.size(l, h));
  return o;
}

void expect_same_decisions(const Outcome& own, const Outcome& separate) {
  EXPECT_GT(own.stats.prune_events, 0) << "the budget must make TriAttention prune";
  EXPECT_EQ(own.tokens, separate.tokens);
  EXPECT_EQ(own.stats.prune_events, separate.stats.prune_events);
  EXPECT_EQ(own.stats.kv_peak_tokens, separate.stats.kv_peak_tokens);
  EXPECT_EQ(own.stats.kv_peak_bytes, separate.stats.kv_peak_bytes);
  EXPECT_EQ(own.keep, separate.keep);
}

CalibrationResult calibrated(const Model& m) {
  CalibrateOptions opt;
  return calibrate_text(m, test::read_file(std::string(TRIATTN_SOURCE_DIR) + "/tests/data/calibration_stories.txt"),
                        opt);
}

TEST(StatsInModelEngine, GgufWithStatisticsDecidesAsWithTheStatsFile) {
  test::TempDir dir;
  const std::string gguf = test::kTinyStories + "/TinyStories-656K-Q8_0.gguf";
  const auto original = Model::load(gguf);
  const CalibrationResult r = calibrated(*original);
  const std::string separate = dir.file("tiny.stats"), carrying = dir.file("tiny+stats.gguf");
  write_stats_file(separate, r.stats, r.info);
  embed_stats_in_gguf(gguf, carrying, r.stats, r.info, false);
  const auto own = Model::load(carrying);

  const Outcome with_own = run_triattention(*own, "");
  EXPECT_TRUE(with_own.warnings.empty()) << with_own.warnings.front();
  expect_same_decisions(with_own, run_triattention(*original, separate));
  // --stats over the model's own statistics: used, and said so.
  const Outcome overridden = run_triattention(*own, separate);
  expect_same_decisions(with_own, overridden);
  ASSERT_EQ(overridden.warnings.size(), 1u);
  EXPECT_NE(overridden.warnings[0].find("is used instead of the statistics stored in " + carrying), std::string::npos)
      << overridden.warnings[0];
}

TEST(StatsInModelEngine, HfDirectoryWithStatisticsDecidesAsWithTheStatsFile) {
  test::TempDir dir;
  for (const auto& e : std::filesystem::directory_iterator(test::kTinyStories))
    if (e.path().extension() != ".gguf") std::filesystem::copy_file(e.path(), dir / e.path().filename().string());
  const std::string hf = dir.path().string();
  const auto bare = Model::load(hf);
  const CalibrationResult r = calibrated(*bare);
  test::TempDir elsewhere;
  const std::string separate = elsewhere.file("tiny.stats");
  write_stats_file(separate, r.stats, r.info);
  const Outcome with_file = run_triattention(*bare, separate);
  write_stats_beside_hf(hf, r.stats, r.info, false);
  const auto own = Model::load(hf);
  const Outcome with_own = run_triattention(*own, "");
  EXPECT_TRUE(with_own.warnings.empty()) << with_own.warnings.front();
  expect_same_decisions(with_own, with_file);
}

TEST(StatsInModelEngine, PoliciesWithoutStatisticsDoNotReadThem) {
  // A model whose stored statistics belong to other weights still runs full attention:
  // only a policy that scores with statistics loads (and checks) them.
  test::TempDir dir;
  const std::string gguf = test::kTinyStories + "/TinyStories-656K-Q8_0.gguf";
  const auto original = Model::load(gguf);
  CalibrationResult r = calibrated(*original);
  for (float& v : r.info.weights_fingerprint) v = -v;
  const std::string carrying = dir.file("tiny+other.gguf");
  embed_stats_in_gguf(gguf, carrying, r.stats, r.info, false);
  const auto own = Model::load(carrying);
  KvSettings full;
  const PolicyFactory ok(*own, full);
  EXPECT_TRUE(ok.warnings().empty());
  KvSettings tri;
  tri.policy = "triattention";
  try {
    const PolicyFactory refused(*own, tri);
    ADD_FAILURE() << "statistics of other weights were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("different weights"), std::string::npos) << e.what();
  }
}

}  // namespace stats_in_model_engine_test
