// TRIATTN_ISA and TRIATTN_REPACK (cli/kernel_environment.h): read by the CLI and passed to the
// library as ops::select_isa and LoadOptions::repack; `info` and `bench` name the kernels in use
// and why.
#include "cli/kernel_environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include <filesystem>
#include <fstream>

#include "cli/common.h"
#include "cli_run.h"
#include "common/temp_dir.h"
#include "core/error.h"
#include "ops/kernel_variants.h"
#include "ops/ops.h"

namespace triattn::cli {
namespace {

// Sets one variable for the scope (for this process and the commands it starts).
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name); }
  const char* name;
};

TEST(KernelEnvironment, RepackSwitch) {
  EXPECT_TRUE(repack_environment());
  {
    const ScopedEnv e("TRIATTN_REPACK", "0");
    EXPECT_FALSE(repack_environment());
  }
  {
    const ScopedEnv e("TRIATTN_REPACK", "1");
    EXPECT_TRUE(repack_environment());
  }
  {
    const ScopedEnv e("TRIATTN_REPACK", "");
    EXPECT_TRUE(repack_environment());
  }
  const ScopedEnv e("TRIATTN_REPACK", "maybe");
  try {
    repack_environment();
    ADD_FAILURE() << "accepted TRIATTN_REPACK=maybe";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("TRIATTN_REPACK=maybe"), std::string::npos) << err.what();
  }
}

// load_model (every command's loader) repacks unless TRIATTN_REPACK=0 or its options say no.
// The layouts come from the ISA table here: a measured choice may keep plain Q8_0 on a CPU
// where it is fastest, and would make this test depend on timing.
TEST(KernelEnvironment, RepackSwitchReachesTheLoader) {
  const ScopedEnv isa("TRIATTN_KERNELS", "isa");
  const std::string path = test::shared_path("models/tinystories-656k/TinyStories-656K-Q8_0.gguf");
  EXPECT_NE(load_model(path, {.threads = 1})->weights().layers[0].wq.type, DType::Q8_0);
  EXPECT_EQ(load_model(path, {.repack = false, .threads = 1})->weights().layers[0].wq.type, DType::Q8_0);
  const ScopedEnv e("TRIATTN_REPACK", "0");
  EXPECT_EQ(load_model(path, {.threads = 1})->weights().layers[0].wq.type, DType::Q8_0);
}

TEST(KernelEnvironment, IsaOverride) {
  EXPECT_EQ(isa_choice(), std::string(ops::isa_name(ops::active_isa())) + " (detected: the best this CPU runs)");
  {
    const ScopedEnv e("TRIATTN_ISA", "");
    apply_isa_environment();  // empty: the detected choice stays
    EXPECT_FALSE(ops::isa_selected());
  }
  {
    const ScopedEnv e("TRIATTN_ISA", "sse9");
    try {
      apply_isa_environment();
      ADD_FAILURE() << "accepted TRIATTN_ISA=sse9";
    } catch (const Error& err) {
      EXPECT_EQ(std::string(err.what()).rfind("TRIATTN_ISA=sse9: not an instruction set this CPU runs (supported: scalar", 0),
                0u)
          << err.what();
    }
  }
  const ScopedEnv e("TRIATTN_ISA", "scalar");
  apply_isa_environment();
  EXPECT_EQ(ops::active_isa(), ops::Isa::Scalar);
  EXPECT_EQ(isa_choice(), "scalar (TRIATTN_ISA)");
  ops::set_isa_for_testing(ops::supported_isas().back());
}

TEST(KernelEnvironment, InfoNamesTheKernelsAndWhy) {
  const std::string model = test::shared_path("models/tinystories-656k/TinyStories-656K-Q8_0.gguf");
  const std::string best(ops::isa_name(ops::supported_isas().back()));
  test::RunResult r = test::run_triattn({"info", "-m", model});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("kernels       " + best + " (detected: the best this CPU runs)\n"), std::string::npos) << r.out;
  {
    const ScopedEnv e("TRIATTN_ISA", "scalar");
    r = test::run_triattn({"info", "-m", model, "--json"});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["kernels"], "scalar (TRIATTN_ISA)");
  }
  // Every command refuses an instruction set the CPU lacks, before it does anything.
  const ScopedEnv e("TRIATTN_ISA", "sse9");
  r = test::run_triattn({"info", "-m", model});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("triattn info: error: TRIATTN_ISA=sse9: not an instruction set this CPU runs"), std::string::npos)
      << r.err;
}

TEST(KernelEnvironment, KernelChoiceSwitch) {
  EXPECT_EQ(kernel_choice_environment(), KernelChoiceMode::Measure);
  {
    const ScopedEnv e("TRIATTN_KERNELS", "remeasure");
    EXPECT_EQ(kernel_choice_environment(), KernelChoiceMode::Remeasure);
  }
  {
    const ScopedEnv e("TRIATTN_KERNELS", "isa");
    EXPECT_EQ(kernel_choice_environment(), KernelChoiceMode::Isa);
  }
  {
    const ScopedEnv e("TRIATTN_KERNELS", "fastest");
    try {
      kernel_choice_environment();
      ADD_FAILURE() << "accepted TRIATTN_KERNELS=fastest";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("TRIATTN_KERNELS=fastest: expected measure"), std::string::npos)
          << err.what();
    }
  }
  // An instruction set named by TRIATTN_ISA is used as it is: nothing is measured.
  const ScopedEnv e("TRIATTN_ISA", "scalar");
  apply_isa_environment();
  EXPECT_EQ(kernel_choice_environment(), KernelChoiceMode::Isa);
  ops::set_isa_for_testing(ops::supported_isas().back());
}

TEST(KernelEnvironment, CachePathFollowsXdgThenHome) {
  const ScopedEnv x("XDG_CACHE_HOME", "/somewhere/cache");
  EXPECT_EQ(kernel_cache_path(), "/somewhere/cache/triattn/kernels.json");
  unsetenv("XDG_CACHE_HOME");
  const ScopedEnv h("HOME", "/home/someone");
  EXPECT_EQ(kernel_cache_path(), "/home/someone/.cache/triattn/kernels.json");
}

// Kernel choices measured once, written to the cache, taken from it the next time, and a
// damaged cache replaced. (Measured here on the tiny model's matrices, which the CLI would
// think too small to time.)
TEST(KernelEnvironment, ChoicesAreMeasuredCachedAndReused) {
  struct Reset {
    ~Reset() { ops::reset_kernel_variants(); }
  } reset;
  const test::TempDir dir;
  const std::string cache = (dir.path() / "sub" / "kernels.json").string();
  const auto model = Model::load(test::kStoriesGguf, {.repack = false, .threads = 1});
  const ModelWeights& w = model->weights();
  const int64_t rows = w.layers[0].wq.shape[0], cols = w.layers[0].wq.shape[1];
  if (ops::kernel_variants(DType::Q8_0, rows, cols).size() < 2)
    GTEST_SKIP() << "this CPU runs one Q8_0 kernel only: nothing to choose";  // scalar-only builds

  choose_kernels(w, 1, KernelChoiceMode::Measure, cache, 0);
  ASSERT_TRUE(std::filesystem::exists(cache));
  nlohmann::json j = nlohmann::json::parse(std::ifstream(cache));
  EXPECT_EQ(j["format"], "triattn-kernel-choices");
  nlohmann::json* q8 = nullptr;
  for (nlohmann::json& e : j["entries"])
    if (e["type"] == "q8_0") q8 = &e;
  ASSERT_NE(q8, nullptr) << j.dump();
  EXPECT_EQ((*q8)["timings"].size(), ops::kernel_variants(DType::Q8_0, rows, cols).size());
  EXPECT_EQ((*q8)["threads"], 1);
  const std::string chosen = (*q8)["isa"].get<std::string>() + " " + (*q8)["layout"].get<std::string>();
  EXPECT_EQ(ops::variant_name(ops::current_variant(DType::Q8_0, rows, cols)), chosen);
  EXPECT_EQ(kernel_choice_lines().back().rfind("q8_0: " + chosen, 0), 0u) << kernel_choice_lines().back();

  // The next load takes the cached choice, even one that is not the fastest now.
  ops::reset_kernel_variants();
  const std::string plain = std::string(ops::isa_name(ops::supported_isas().back()));
  (*q8)["isa"] = plain;
  (*q8)["batch_isa"] = plain;
  (*q8)["layout"] = "q8_0";
  std::ofstream(cache) << j.dump();
  choose_kernels(w, 1, KernelChoiceMode::Measure, cache, 0);
  EXPECT_EQ(ops::current_variant(DType::Q8_0, rows, cols), (ops::KernelVariant{ops::supported_isas().back(), DType::Q8_0}));
  EXPECT_NE(kernel_choice_lines().back().find("(cached)"), std::string::npos) << kernel_choice_lines().back();
  EXPECT_EQ(cached_kernel_choices(w, cache).size(), j["entries"].size());

  // remeasure replaces the entry instead of adding one.
  choose_kernels(w, 1, KernelChoiceMode::Remeasure, cache, 0);
  const nlohmann::json again = nlohmann::json::parse(std::ifstream(cache));
  EXPECT_EQ(again["entries"].size(), j["entries"].size());

  // A damaged file: a warning, then measured again and replaced.
  std::ofstream(cache) << "{not json";
  testing::internal::CaptureStderr();
  choose_kernels(w, 1, KernelChoiceMode::Measure, cache, 0);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("unreadable kernel-choice file"), std::string::npos) << err;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(cache))["format"], "triattn-kernel-choices");
}

}  // namespace
}  // namespace triattn::cli
