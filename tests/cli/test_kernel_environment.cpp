// TRIATTN_ISA and TRIATTN_REPACK (cli/kernel_environment.h): read by the CLI and passed to the
// library as ops::select_isa and LoadOptions::repack; `info` and `bench` name the kernels in use
// and why.
#include "cli/kernel_environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/common.h"
#include "cli_run.h"
#include "core/error.h"
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
TEST(KernelEnvironment, RepackSwitchReachesTheLoader) {
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

}  // namespace
}  // namespace triattn::cli
