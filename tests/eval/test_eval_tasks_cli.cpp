// `triattn eval agree | needle | dfs | math` end to end on stories260K (small runs): the
// reference configuration agrees with itself, a budget covering everything equals full
// exactly, the dfs problems in results.json are the generator's, dfs also runs against a
// live `triattn serve` (--url), and bad data files are refused naming file and line.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <thread>

#include "eval/dfs_task.h"
#include "eval/eval_cli_util.h"

namespace triattn::test {
namespace {

class EvalTasks : public StoriesStats {};

TEST_F(EvalTasks, AgreeFullAndCoveringBudgetAgreeExactly) {
  ScratchDir out;
  const std::string prompts = out.write("prompts.txt", "Once upon a time\nThe little dog\n");
  const RunResult r = run_triattn({"eval", "agree", "-m", kStories, "--prompts", prompts, "-n", "24", "--policies",
                                   "triattention", "--stats", stats_, "--budgets", "4,1000", "--divide-length", "4",
                                   "--window", "0", "-t", "2", "-o", (out / "res").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = read_results(out / "res");
  const auto& full = result_of(j, "full");
  EXPECT_EQ(full.at("agreement"), 1.0);
  const auto& wide = result_of(j, "triattention", 1000);
  EXPECT_EQ(wide.at("agreement"), 1.0);
  EXPECT_EQ(wide.at("first_divergence"), 24.0);
  // Not exactly 0: this policy prefills in chunks of at most beta tokens, full in one, so the
  // sums round differently.
  EXPECT_LT(wide.at("mean_kl").get<double>(), 1e-9);
  const auto& tight = result_of(j, "triattention", 4);
  EXPECT_GT(tight.at("mean_kl").get<double>(), 0.0) << "a 4-token budget changes the distributions";
  EXPECT_LE(tight.at("agreement").get<double>(), 1.0);
  ASSERT_EQ(tight.at("samples").size(), 2u);
  EXPECT_EQ(tight.at("samples")[0].at("tokens").size(), 24u);
  EXPECT_TRUE(std::filesystem::exists(out / "res" / "agree_vs_budget.svg"));
  EXPECT_TRUE(std::filesystem::exists(out / "res" / "kl_vs_budget.svg"));
}

// What a KV type costs: full attention in q8_0 against the reference in f16, in one run, on
// bytelm-2k (head_dim 64: two Q8_0 blocks per row). The same type on both sides agrees exactly.
TEST_F(EvalTasks, AgreeMeasuresAKvTypeAgainstTheReferenceType) {
  const std::string model = shared_path("models/bytelm-2k");
  ASSERT_TRUE(std::filesystem::exists(model)) << model << " is missing (../shared/models/bytelm-2k)";
  ScratchDir out;
  const std::string prompts = out.write("prompts.txt", "The quick brown fox \nIn the year 1900, \n");
  for (const char* type : {"q8_0", "f16"}) {
    SCOPED_TRACE(type);
    const std::string dir = (out / type).string();
    const RunResult r = run_triattn({"eval", "agree", "-m", model, "--prompts", prompts, "-n", "32", "--policies",
                                     "full", "--kv-type", type, "--reference-kv-type", "f16", "-t", "2", "-o", dir});
    ASSERT_EQ(r.rc, 0) << r.err;
    const auto j = read_results(dir);
    ASSERT_EQ(j.at("results").size(), 2u) << "the reference and full attention in --kv-type";
    EXPECT_EQ(j.at("configurations"), nlohmann::json::array({"full[f16]", "full"}));
    EXPECT_EQ(j.at("settings").at("kv_type"), type);
    EXPECT_EQ(result_of(j, "full[f16]").at("agreement"), 1.0);
    const auto& run = result_of(j, "full");
    if (std::string(type) == "f16") {
      EXPECT_EQ(run.at("agreement"), 1.0);
      EXPECT_EQ(run.at("mean_kl"), 0.0) << "the same cache type computes the same logits";
    } else {
      // 8-bit keys and values move every logit a little: the KL is positive, and small.
      EXPECT_GT(run.at("mean_kl").get<double>(), 0.0);
      EXPECT_LT(run.at("mean_kl").get<double>(), 0.05);
      EXPECT_GT(run.at("agreement").get<double>(), 0.5);
    }
  }
  const RunResult bad = run_triattn({"eval", "agree", "-m", model, "--prompts", prompts, "--policies", "full",
                                     "--reference-kv-type", "q4_0", "-o", (out / "bad").string()});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("--kv-type 'q4_0' must be f16, f32 or q8_0"), std::string::npos) << bad.err;
}

TEST_F(EvalTasks, NeedleOnSample) {
  ScratchDir out;
  const std::string data = std::string(TRIATTN_SOURCE_DIR) + "/tests/data/needle_sample.jsonl";
  const RunResult r = run_triattn({"eval", "needle", "-m", kStories, "--data", data, "--policies",
                                   "triattention,triattention-split,snapkv", "--stats", stats_, "--budgets", "8,1000",
                                   "--divide-length", "4", "--window", "0",
                                   "-t", "2", "-o", out.path().string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = read_results(out.path());
  EXPECT_EQ(j.at("items"), 3);
  const auto& full = result_of(j, "full");
  EXPECT_GT(full.at("accuracy").get<double>(), 0.5) << "stories260K names its characters: " << full.dump();
  EXPECT_EQ(result_of(j, "triattention", 1000).at("accuracy"), full.at("accuracy"));
  EXPECT_EQ(result_of(j, "triattention-split", 1000).at("accuracy"), full.at("accuracy"));
  // The prompts (24-40 tokens) are longer than B + β = 12: every policy prefills them in
  // bounded memory, pruning between chunks, and the needle report says so.
  EXPECT_GT(full.at("kv_peak_tokens").get<int64_t>(), 20);
  for (const char* p : {"triattention", "triattention-split", "snapkv"}) {
    EXPECT_LE(result_of(j, p, 8).at("kv_peak_tokens").get<int64_t>(), 8 + 4) << p;
    for (const auto& s : result_of(j, p, 8).at("samples")) EXPECT_LE(s.at("kv_peak_tokens").get<int64_t>(), 12) << p;
  }
  EXPECT_TRUE(full.at("samples")[0].at("depth").is_number());
  EXPECT_TRUE(full.at("samples")[1].at("depth").is_null()) << "answer not in the prompt";
  EXPECT_TRUE(std::filesystem::exists(out / "needle_vs_budget.svg"));
}

TEST_F(EvalTasks, DfsThroughTheEngine) {
  ScratchDir out;
  const RunResult r = run_triattn({"eval", "dfs", "-m", kStories, "--steps", "2,4", "--samples", "2", "--seed", "5",
                                   "--max-tokens", "8", "--policies", "full", "-t", "2", "-o", out.path().string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = read_results(out.path());
  EXPECT_EQ(j.at("problems"), 4);
  const auto& full = result_of(j, "full");
  ASSERT_EQ(full.at("samples").size(), 4u);
  size_t i = 0;
  for (int k : {2, 4})
    for (int s = 0; s < 2; ++s, ++i) {
      const auto& sample = full.at("samples")[i];
      EXPECT_EQ(sample.at("answer"), eval::make_dfs_problem(k, 5, s).answer);
      EXPECT_EQ(sample.at("group"), std::to_string(k));
      ASSERT_EQ(sample.at("replies").size(), 1u);
      EXPECT_LE(sample.at("replies")[0].at("tokens").get<int>(), 8);
    }
  EXPECT_TRUE(full.at("accuracy").is_number());
  EXPECT_TRUE(std::filesystem::exists(out / "dfs_by_steps.svg"));
}

// `triattn serve --port 0` in the background; the port is read from its stderr.
class Server {
 public:
  explicit Server(const std::string& model) {
    log_ = (dir_ / "serve.log").string();
    pid_ = fork();
    if (pid_ == 0) {
      const std::string cmd = "exec " + sh_quote(TRIATTN_BINARY) + " serve -m " + sh_quote(model) +
                              " --port 0 -t 1 --parallel 2 2> " + sh_quote(log_);
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    // The whole line (it goes on with " (KV policy"): the log may be read while it is written.
    static const std::regex re(R"(listening on (http://\S+) \()");
    for (int i = 0; i < 600 && url_.empty(); ++i) {  // up to a minute on a loaded machine
      std::smatch m;
      const std::string log = slurp(log_);
      if (std::regex_search(log, m, re)) url_ = m[1].str();
      else if (waitpid(pid_, nullptr, WNOHANG) == pid_) break;
      else std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~Server() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& url() const { return url_; }
  std::string log() const { return slurp(log_); }

 private:
  ScratchDir dir_;
  std::string log_, url_;
  pid_t pid_ = -1;
};

TEST_F(EvalTasks, DfsAgainstRunningServer) {
  Server srv(kStories);
  ASSERT_FALSE(srv.url().empty()) << "serve did not start: " << srv.log();
  ScratchDir out;
  const RunResult r = run_triattn({"eval", "dfs", "--url", srv.url(), "--prompt-format", "raw", "--steps", "3",
                                   "--samples", "2", "--max-tokens", "6", "--policies", "full", "-t", "2", "-o",
                                   out.path().string()});
  ASSERT_EQ(r.rc, 0) << r.err << "\nserver:\n" << srv.log();
  const auto j = read_results(out.path());
  EXPECT_NE(j.at("backend").get<std::string>().find("/v1/completions"), std::string::npos);
  const auto& full = result_of(j, "full");
  ASSERT_EQ(full.at("samples").size(), 2u);
  for (const auto& s : full.at("samples")) {
    EXPECT_GT(s.at("replies")[0].at("tokens").get<int>(), 0) << s.dump();
    EXPECT_EQ(s.at("replies")[0].at("finish_reason"), "length");
  }
  // Without --policies, the server's own settings: one configuration named "server".
  ScratchDir out2;
  const RunResult r2 = run_triattn({"eval", "dfs", "--url", srv.url(), "--prompt-format", "raw", "--steps", "3",
                                    "--samples", "1", "--max-tokens", "4", "-o", out2.path().string()});
  ASSERT_EQ(r2.rc, 0) << r2.err;
  EXPECT_EQ(read_results(out2.path()).at("results")[0].at("policy"), "server");
  // An unreachable server is a clear error.
  const RunResult bad = run_triattn({"eval", "dfs", "--url", "http://127.0.0.1:1", "--steps", "3", "--samples", "1",
                                     "-o", out2.path().string()});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("127.0.0.1:1"), std::string::npos) << bad.err;
}

TEST_F(EvalTasks, MathThroughTheEngineAndBadData) {
  ScratchDir out;
  const std::string data = std::string(TRIATTN_SOURCE_DIR) + "/tests/data/math_sample.jsonl";
  const RunResult r = run_triattn({"eval", "math", "-m", kStories, "--data", data, "--samples", "2", "--max-tokens",
                                   "6", "--policies", "full", "-t", "2", "-o", out.path().string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = read_results(out.path());
  const auto& full = result_of(j, "full");
  ASSERT_EQ(full.at("samples").size(), 2u);
  EXPECT_EQ(full.at("samples")[0].at("replies").size(), 2u) << "one reply per seed";
  EXPECT_EQ(full.at("accuracy"), 0.0) << "stories260K does not do arithmetic";

  const std::string bad = out.write("bad.jsonl", "{\"problem\": \"1+1\", \"answer\": \"2\"}\n{\"problem\": \"x\"}\n");
  const RunResult e = run_triattn({"eval", "math", "-m", kStories, "--data", bad, "-o", (out / "e").string()});
  EXPECT_EQ(e.rc, 1);
  EXPECT_NE(e.err.find(bad + ":2: field 'answer' is missing"), std::string::npos) << e.err;
  const std::string broken = out.write("broken.jsonl", "{\"text\": \"a\", \"answer\": \"1\"}\n{not json\n");
  const RunResult n = run_triattn({"eval", "needle", "-m", kStories, "--data", broken, "--policies", "full", "-o",
                                   (out / "n").string()});
  EXPECT_EQ(n.rc, 1);
  EXPECT_NE(n.err.find(broken + ":2: not valid JSON"), std::string::npos) << n.err;
  const RunResult both = run_triattn({"eval", "dfs", "-o", (out / "d").string()});
  EXPECT_EQ(both.rc, 1);
  EXPECT_NE(both.err.find("-m MODEL"), std::string::npos) << both.err;
}

}  // namespace
}  // namespace triattn::test
