// Replays tests/data/fuzz_regressions/<target>/* through the fuzz targets themselves (fuzz/,
// compiled in here with their entry points renamed), in the normal build and under the
// sanitizers: every input that once crashed, leaked or hung a target, plus hand-written
// adversarial inputs, must now end in a named error or a normal result. A target that still
// misbehaves aborts this test (exception other than triattn::Error) or trips the sanitizer.
// Lives under tests/server because the server library links every parser the targets use.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// Each target's source, its libFuzzer entry points renamed to <target>_one / <target>_init.
#define LLVMFuzzerTestOneInput fuzz_gguf_one
#include "../../fuzz/fuzz_gguf.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_gguf_vocab_one
#include "../../fuzz/fuzz_gguf_vocab.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_gguf_model_one
#include "../../fuzz/fuzz_gguf_model.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_safetensors_one
#include "../../fuzz/fuzz_safetensors.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_hf_checkpoint_one
#include "../../fuzz/fuzz_hf_checkpoint.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_llama2c_one
#define LLVMFuzzerInitialize fuzz_llama2c_init
#include "../../fuzz/fuzz_llama2c.cpp"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize
#define LLVMFuzzerTestOneInput fuzz_llama2c_vocab_one
#include "../../fuzz/fuzz_llama2c_vocab.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_stats_safetensors_one
#include "../../fuzz/fuzz_stats_safetensors.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_stats_pt_one
#include "../../fuzz/fuzz_stats_pt.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_stats_tria_one
#include "../../fuzz/fuzz_stats_tria.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_stats_npz_one
#include "../../fuzz/fuzz_stats_npz.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_pickle_one
#include "../../fuzz/fuzz_pickle.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_zip_one
#include "../../fuzz/fuzz_zip.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_tokenizer_json_one
#include "../../fuzz/fuzz_tokenizer_json.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_vocab_merges_one
#include "../../fuzz/fuzz_vocab_merges.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_tiktoken_one
#include "../../fuzz/fuzz_tiktoken.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_tokenize_one
#define LLVMFuzzerInitialize fuzz_tokenize_init
#include "../../fuzz/fuzz_tokenize.cpp"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize
#define LLVMFuzzerTestOneInput fuzz_jinja_one
#include "../../fuzz/fuzz_jinja.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_completion_request_one
#define LLVMFuzzerInitialize fuzz_completion_request_init
#include "../../fuzz/fuzz_completion_request.cpp"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize

namespace {

namespace fs = std::filesystem;

struct Target {
  const char* name;
  int (*one)(const uint8_t*, size_t);
  int (*init)(int*, char***);
};

const Target kTargets[] = {
    {"fuzz_gguf", fuzz_gguf_one, nullptr},
    {"fuzz_gguf_vocab", fuzz_gguf_vocab_one, nullptr},
    {"fuzz_gguf_model", fuzz_gguf_model_one, nullptr},
    {"fuzz_safetensors", fuzz_safetensors_one, nullptr},
    {"fuzz_hf_checkpoint", fuzz_hf_checkpoint_one, nullptr},
    {"fuzz_llama2c", fuzz_llama2c_one, fuzz_llama2c_init},
    {"fuzz_llama2c_vocab", fuzz_llama2c_vocab_one, nullptr},
    {"fuzz_stats_safetensors", fuzz_stats_safetensors_one, nullptr},
    {"fuzz_stats_pt", fuzz_stats_pt_one, nullptr},
    {"fuzz_stats_tria", fuzz_stats_tria_one, nullptr},
    {"fuzz_stats_npz", fuzz_stats_npz_one, nullptr},
    {"fuzz_pickle", fuzz_pickle_one, nullptr},
    {"fuzz_zip", fuzz_zip_one, nullptr},
    {"fuzz_tokenizer_json", fuzz_tokenizer_json_one, nullptr},
    {"fuzz_vocab_merges", fuzz_vocab_merges_one, nullptr},
    {"fuzz_tiktoken", fuzz_tiktoken_one, nullptr},
    {"fuzz_tokenize", fuzz_tokenize_one, fuzz_tokenize_init},
    {"fuzz_jinja", fuzz_jinja_one, nullptr},
    {"fuzz_completion_request", fuzz_completion_request_one, fuzz_completion_request_init},
};

const fs::path kRegressions = fs::path(TRIATTN_SOURCE_DIR) / "tests/data/fuzz_regressions";

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class FuzzReplay : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzReplay, RegressionInputsEndInNamedErrorsOrResults) {
  const Target& t = GetParam();
  const fs::path dir = kRegressions / t.name;
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing: every fuzz target keeps its regression inputs there";
  std::vector<fs::path> inputs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "README.md") inputs.push_back(e.path());
  }
  std::sort(inputs.begin(), inputs.end());
  ASSERT_FALSE(inputs.empty()) << dir << " holds no inputs";
  if (t.init) t.init(nullptr, nullptr);
  for (const fs::path& p : inputs) {
    SCOPED_TRACE(p.string());
    const std::string bytes = read_all(p);
    EXPECT_EQ(t.one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::ValuesIn(kTargets),
                         [](const ::testing::TestParamInfo<Target>& i) { return std::string(i.param.name); });

TEST(FuzzReplay, EveryTargetHasARegressionDirectory) {
  for (const auto& e : fs::directory_iterator(kRegressions)) {
    if (!e.is_directory()) continue;
    const std::string name = e.path().filename().string();
    const bool known = std::any_of(std::begin(kTargets), std::end(kTargets),
                                   [&](const Target& t) { return name == t.name; });
    EXPECT_TRUE(known) << "regression directory " << e.path() << " names no fuzz target";
  }
}

}  // namespace
