#pragma once
// Shared helpers for engine tests: greedy generation with given KV settings, and
// TinyStories statistics calibrated once per test binary.
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/calibrate.h"
#include "engine/generate.h"
#include "engine/kv_setup.h"
#include "engine/sequence.h"
#include "model/model.h"

namespace triattn::test {

inline const std::string kTinyStories = std::string(TRIATTN_SHARED_DIR) + "/models/tinystories-656k";

struct Generation {
  std::vector<int32_t> tokens;
  RunStats stats;
};

// n tokens greedily (end-of-generation ignored) on a fresh sequence of `policies`; notices
// go to `notices` when given.
inline GenerateResult greedy_run(const Model& m, const PolicyFactory& policies, const std::vector<int32_t>& prompt,
                                 int64_t n, ThreadPool* pool, NoticeFn notices = nullptr) {
  Forward fwd(m, pool);
  SamplerParams sp;
  sp.temperature = 0;
  return generate_fresh(m, fwd, policies, prompt, n, sp, std::move(notices));
}

inline Generation greedy_generate(const Model& m, const KvSettings& kv, const std::vector<int32_t>& prompt, int64_t n,
                                  ThreadPool* pool) {
  PolicyFactory policies(m, kv);
  GenerateResult r = greedy_run(m, policies, prompt, n, pool);
  return {r.tokens, r.stats};
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Statistics from `triattn calibrate`'s own driver on the committed calibration text.
inline std::shared_ptr<const HeadStats> calibrated_stats(const Model& m) {
  CalibrateOptions opt;
  const std::string text = read_file(std::string(TRIATTN_SOURCE_DIR) + "/tests/data/calibration_stories.txt");
  return std::make_shared<HeadStats>(calibrate_text(m, text, opt).stats);
}

inline double agreement(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t same = 0;
  for (size_t i = 0; i < n; ++i) same += a[i] == b[i];
  return n ? static_cast<double>(same) / static_cast<double>(n) : 0.0;
}

inline size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

}  // namespace triattn::test
