// `triattn bench` end to end on the real TinyStories model: the JSON contract scripts read,
// the memory accounting (full keeps every token, TriAttention stays within B + beta) and the
// error messages. Speeds are only checked to be positive: tests never assert timings.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/shared_files.h"

namespace {

using triattn::test::kStoriesGguf;


struct BenchRun {
  int rc = -1;
  std::string out;
};

// Runs the binary; stderr is kept only when asked (progress lines would break the JSON).
BenchRun run_bench(const std::string& args, bool with_stderr = false) {
  const std::string cmd = std::string(TRIATTN_BINARY) + " bench -m " + kStoriesGguf + " " + args +
                          (with_stderr ? " 2>&1" : " 2>/dev/null");
  BenchRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The rows of a JSON array by (policy, the integer field `key`).
std::map<std::pair<std::string, int64_t>, nlohmann::json> by_policy_and(const nlohmann::json& rows, const char* key) {
  std::map<std::pair<std::string, int64_t>, nlohmann::json> by;
  for (const auto& row : rows) by[{row.at("policy").get<std::string>(), row.at(key).get<int64_t>()}] = row;
  return by;
}

const nlohmann::json* find_run(const nlohmann::json& runs, const std::string& policy, int64_t depth) {
  for (const auto& r : runs)
    if (r.at("policy") == policy && r.at("depth") == depth) return &r;
  return nullptr;
}

// TinyStories: 2 layers x 4 KV heads x head_dim 16, f16 cache: K+V of one token in every
// stream is 2 * 4 * 16 * 2 bytes * 2 = 512 bytes.
constexpr double kBytesPerToken = 512;

TEST(Bench, JsonFullVersusTriAttention) {
  const BenchRun r = run_bench("-t 1 --depths 0,300 --kv-budget 64 --reps 1 --probe-mib 64 --probe-runs 2 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("machine").at("bandwidth_gbs").get<double>(), 0);
  EXPECT_EQ(j.at("machine").at("threads").get<int>(), 1);
  EXPECT_NE(j.at("settings").at("calibration").get<std::string>().find("built-in"), std::string::npos);
  const auto& runs = j.at("runs");
  ASSERT_EQ(runs.size(), 4u);
  for (const auto& run : runs) {
    for (const char* key : {"policy", "depth", "pp_tok_s", "tg_tok_s", "tg_tok_s_sd", "kv_peak_bytes",
                            "scoring_share", "bandwidth_gbs"})
      EXPECT_TRUE(run.contains(key)) << key;
    EXPECT_GT(run.at("pp_tok_s").get<double>(), 0);
    EXPECT_GT(run.at("tg_tok_s").get<double>(), 0);
    EXPECT_GT(run.at("bandwidth_gbs").get<double>(), 0);
    EXPECT_EQ(run.at("tg_tok_s_sd").get<double>(), 0);  // one repetition has no spread
    const double share = run.at("scoring_share").get<double>();
    EXPECT_GE(share, 0);
    EXPECT_LE(share, 1);
    EXPECT_TRUE(run.at("synthetic_depth").get<bool>());
  }

  const auto* full = find_run(runs, "full", 300);
  const auto* tri = find_run(runs, "triattention", 300);
  ASSERT_TRUE(full && tri);
  // Full attention holds the whole depth plus every decoded token, and attention reads
  // depth + i rows at decode step i (mean over i = 1..128).
  EXPECT_EQ(full->at("kv_peak_tokens").get<int64_t>(), 300 + 128);
  EXPECT_EQ(full->at("kv_peak_bytes").get<double>(), (300 + 128) * kBytesPerToken);
  EXPECT_DOUBLE_EQ(full->at("kv_bytes_per_token").get<double>(), (300 + 64.5) * kBytesPerToken);
  EXPECT_EQ(full->at("prune_events").get<int64_t>(), 0);
  // TriAttention with B = 64, beta = 128 never holds more than 192 tokens per stream and
  // prunes during the 128 decode steps.
  EXPECT_LE(tri->at("kv_peak_tokens").get<int64_t>(), 64 + 128);
  EXPECT_LE(tri->at("kv_peak_bytes").get<double>(), full->at("kv_peak_bytes").get<double>());
  EXPECT_LE(tri->at("kv_peak_bytes").get<double>(), (64 + 128) * kBytesPerToken);
  EXPECT_GE(tri->at("prune_events").get<int64_t>(), 1);
  EXPECT_LT(tri->at("kv_bytes_per_token").get<double>(), full->at("kv_bytes_per_token").get<double>());
  // At depth 0 with B = 64 the cache passes 192 tokens during decode only after the
  // 192nd step, so 128 steps never prune.
  const auto* tri0 = find_run(runs, "triattention", 0);
  ASSERT_TRUE(tri0);
  EXPECT_EQ(tri0->at("prune_events").get<int64_t>(), 0);
  EXPECT_EQ(tri0->at("kv_peak_tokens").get<int64_t>(), 128);
}

// --batch: sequences decoding together. Each keeps its own cache (the same per-sequence peak
// as alone), TriAttention prunes each of them, and a bad batch is refused by name.
TEST(Bench, BatchedDecodeKeepsEachSequencesMemory) {
  const BenchRun r = run_bench("-t 1 --depths 300 --batch 1,3 --kv-budget 64 --divide-length 16 --reps 1 --pp 0 "
                               "--tg 20 --probe-mib 16 --probe-runs 1 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("runs").size(), 4u);  // 2 policies x 2 batches
  const auto by = by_policy_and(j.at("runs"), "batch");
  for (const std::string p : {"full", "triattention"}) {
    const auto& one = by.at({p, 1});
    const auto& three = by.at({p, 3});
    EXPECT_GT(three.at("tg_tok_s").get<double>(), 0);
    EXPECT_EQ(three.at("kv_peak_tokens"), one.at("kv_peak_tokens")) << p;
    EXPECT_DOUBLE_EQ(three.at("kv_bytes_per_token").get<double>(), one.at("kv_bytes_per_token").get<double>()) << p;
  }
  EXPECT_EQ(by.at({"full", 3}).at("kv_peak_tokens"), 320);
  EXPECT_LE(by.at({"triattention", 3}).at("kv_peak_tokens").get<int>(), 64 + 16);
  EXPECT_EQ(by.at({"triattention", 3}).at("prune_events").get<int>(), 3 * by.at({"triattention", 1}).at("prune_events").get<int>());
  const BenchRun bad = run_bench("--batch 0", true);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("--batch"), std::string::npos) << bad.out;
}

// --prompt: the time to first token of a long prompt per policy. Full attention holds the whole
// prompt; TriAttention prefills it in chunks of beta, pruned to B between them, so its peak
// stays within B + beta and it prunes on the way. The text mode prints the table too.
TEST(Bench, PromptTimeToFirstTokenPerPolicy) {
  const BenchRun r = run_bench("-t 1 --depths 0 --prompt 40,300 --kv-budget 64 --divide-length 16 --reps 1 --pp 0 "
                               "--tg 1 --probe-mib 16 --probe-runs 1 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const auto& prompts = j.at("prompts");
  ASSERT_EQ(prompts.size(), 4u);  // 2 policies x 2 lengths
  for (const auto& p : prompts) {
    for (const char* key : {"ttft_s", "ttft_s_sd", "tok_s", "kv_peak_bytes", "kv_peak_tokens", "prune_events"})
      EXPECT_TRUE(p.contains(key)) << key;
    EXPECT_GT(p.at("ttft_s").get<double>(), 0);
  }
  const auto by = by_policy_and(prompts, "prompt_tokens");
  EXPECT_EQ(by.at({"full", 300}).at("kv_peak_tokens"), 300);
  EXPECT_EQ(by.at({"full", 300}).at("kv_peak_bytes").get<double>(), 300 * kBytesPerToken);
  EXPECT_EQ(by.at({"full", 300}).at("prune_events"), 0);
  EXPECT_LE(by.at({"triattention", 300}).at("kv_peak_tokens").get<int64_t>(), 64 + 16);
  EXPECT_GE(by.at({"triattention", 300}).at("prune_events").get<int64_t>(), (300 - 80) / 16);
  EXPECT_EQ(by.at({"triattention", 40}).at("kv_peak_tokens"), 40);  // below B: nothing to prune
  EXPECT_EQ(by.at({"triattention", 40}).at("prune_events"), 0);

  const BenchRun text = run_bench("-t 1 --depths 0 --policies full --prompt 50 --reps 1 --pp 0 --tg 1 --probe-mib 16 "
                                  "--probe-runs 1");
  ASSERT_EQ(text.rc, 0) << text.out;
  EXPECT_NE(text.out.find("Time to first token"), std::string::npos) << text.out;
  const BenchRun bad = run_bench("--prompt 0", true);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("--prompt"), std::string::npos) << bad.out;
}

TEST(Bench, RepetitionsAndTextTable) {
  const BenchRun r = run_bench("-t 1 --depths 0 --policies full --reps 2 --pp 16 --tg 8 --probe-mib 16 --probe-runs 1");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("synthetic"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("full"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("triattention"), std::string::npos) << r.out;  // not requested
}

// --phases: the decode steps' time by phase of the forward pass, in the JSON (per run, each
// phase's ms per step, share and, where the bytes are fixed, GB/s) and as a table.
TEST(Bench, PhasesOfTheDecodeStep) {
  const BenchRun r = run_bench("-t 1 --depths 0,200 --policies full --reps 2 --pp 0 --tg 8 --probe-mib 16 "
                               "--probe-runs 1 --phases --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("runs").size(), 2u);
  for (const auto& run : j.at("runs")) {
    const auto& ph = run.at("phases");
    double share = 0;
    for (const char* name : {"qkv", "attention", "output", "ffn in", "ffn down", "logits", "other"}) {
      ASSERT_TRUE(ph.contains(name)) << name;
      EXPECT_GT(ph.at(name).at("ms_per_step").get<double>(), 0) << name;
      share += ph.at(name).at("share").get<double>();
    }
    EXPECT_NEAR(share, 1.0, 1e-9);
    EXPECT_TRUE(ph.at("other").at("gbs").is_null());  // no fixed bytes
    EXPECT_GT(ph.at("qkv").at("gbs").get<double>(), 0);
    // Attention reads the K+V the run reports; the matrices their weights, whatever the depth.
    EXPECT_DOUBLE_EQ(ph.at("attention").at("bytes_per_step").get<double>(),
                     run.at("kv_bytes_per_token").get<double>());
  }
  EXPECT_EQ(j.at("runs")[0].at("phases").at("ffn down").at("bytes_per_step"),
            j.at("runs")[1].at("phases").at("ffn down").at("bytes_per_step"));
  const BenchRun plain = run_bench("-t 1 --depths 0 --policies full --reps 1 --pp 0 --tg 2 --probe-mib 16 --probe-runs 1 --json");
  ASSERT_EQ(plain.rc, 0) << plain.out;
  EXPECT_FALSE(nlohmann::json::parse(plain.out).at("runs")[0].contains("phases"));  // only when asked

  const BenchRun text = run_bench("-t 1 --depths 0 --policies full --reps 1 --pp 0 --tg 2 --probe-mib 16 --probe-runs 1 "
                                  "--phases");
  ASSERT_EQ(text.rc, 0) << text.out;
  EXPECT_NE(text.out.find("Decode steps by phase"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("ffn down"), std::string::npos) << text.out;
}

TEST(Bench, StatsFileIsUsedWithoutCalibrating) {
  const std::string text = ::testing::TempDir() + "/bench_calibration.txt";
  {
    std::ofstream out(text);
    for (int i = 0; i < 20; ++i) out << "Once upon a time, a little girl named Lily found a red ball in the park. ";
  }
  const std::string stats = ::testing::TempDir() + "/bench_stats.safetensors";
  const std::string cal = std::string(TRIATTN_BINARY) + " calibrate -m " + kStoriesGguf + " --input " + text +
                          " --max-tokens 200 -t 1 -o " + stats + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cal.c_str()), 0);
  const BenchRun r = run_bench("-t 1 --depths 200 --policies triattention --kv-budget 32 --divide-length 16 --reps 1 "
                          "--pp 16 --tg 40 --probe-mib 16 --probe-runs 1 --json --stats " + stats);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j.at("settings").at("calibration").get<std::string>().find(stats), std::string::npos);
  const auto& run = j.at("runs").at(0);
  // beta = 16: 40 decode steps after a full cache prune at least twice, within B + beta.
  EXPECT_GE(run.at("prune_events").get<int64_t>(), 2);
  EXPECT_LE(run.at("kv_peak_tokens").get<int64_t>(), 32 + 16);
}

TEST(Bench, RejectsUnknownPolicyAndBadReps) {
  BenchRun r = run_bench("--policies full,nonsense --reps 1", true);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("nonsense"), std::string::npos) << r.out;
  r = run_bench("--reps 0", true);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--reps"), std::string::npos) << r.out;
}

}  // namespace
