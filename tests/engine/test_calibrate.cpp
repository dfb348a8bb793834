// `triattn calibrate` refuses, before loading anything, an -o that would
// overwrite one of its inputs or that cannot be written; refuses inputs of fewer than
// kMinCalibrationTokens tokens and warns below kFewCalibrationTokens; writes atomically.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/calibrate.h"
#include "calib/calibrate_paths.h"
#include "calib/stats_file.h"
#include "calib/calib_test_util.h"
#include "cli/cli_run.h"
#include "model/maker.h"
#include "model/model.h"
#include "model/weights_fingerprint.h"

namespace triattn::test {
namespace {

namespace fs = std::filesystem;
using triattn::test::error_of;

const std::string kText = "Once upon a time there was a little robot who liked to count the stars every night. ";

// A random tiny model (GGUF and HF copy), a calibration text and a scratch folder per test.
class Calibrate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    write_random_gguf(model_preset("tiny-llama"), {DType::Q8_0, 1}, gguf());
    write_random_hf(model_preset("tiny-llama"), {DType::F32, 1}, hf());
    write_file(text(), kText + kText);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string gguf() { return dir_->file("tiny.gguf"); }
  static std::string hf() { return dir_->file("tiny-hf"); }
  static std::string text() { return dir_->file("calib.txt"); }
  static inline ScratchDir* dir_ = nullptr;
  ScratchDir out_;
};

// ---- the token minimum (library) ----

TEST_F(Calibrate, FewerThanTheMinimumTokensAfterBosAreRefused) {
  const auto model = Model::load(gguf());
  const int32_t bos = model->tokenizer().bos_id();
  ASSERT_GE(bos, 0);
  CalibrateOptions opt;
  std::string msg = error_of([&] { calibrate_text(*model, "", opt); });
  EXPECT_NE(msg.find("calibration: the input gives 0 token(s) after BOS; at least 2 are needed"), std::string::npos)
      << msg;
  const std::vector<int32_t> one = {bos, 300}, two = {bos, 300, 301}, no_bos = {300};
  msg = error_of([&] { calibrate_tokens(*model, one, opt); });
  EXPECT_NE(msg.find("gives 1 token(s) after BOS"), std::string::npos) << msg;
  msg = error_of([&] { calibrate_tokens(*model, no_bos, opt); });
  EXPECT_NE(msg.find("gives 1 token(s); at least 2"), std::string::npos) << msg;
  const CalibrationResult r = calibrate_tokens(*model, two, opt);
  EXPECT_EQ(r.info.token_count, 3);
  EXPECT_EQ(r.info.weights_fingerprint, weights_fingerprint(*model));

  opt.max_tokens = 2;  // BOS + 1 of a long input
  msg = error_of([&] { calibrate_text(*model, kText, opt); });
  EXPECT_NE(msg.find("gives 1 token(s) after BOS (after --max-tokens 2)"), std::string::npos) << msg;
}

TEST_F(Calibrate, NegativeOptionsAreRefused) {
  const auto model = Model::load(gguf());
  const std::vector<int32_t> toks = {1, 300, 301, 302};
  CalibrateOptions opt;
  opt.max_tokens = -5;
  EXPECT_NE(error_of([&] { calibrate_tokens(*model, toks, opt); }).find("--max-tokens -5 is negative"), std::string::npos);
  opt = {};
  opt.window = -1;
  EXPECT_NE(error_of([&] { calibrate_tokens(*model, toks, opt); }).find("--window -1 is negative"), std::string::npos);
  opt = {};
  opt.chunk = 0;
  EXPECT_NE(error_of([&] { calibrate_tokens(*model, toks, opt); }).find("--chunk 0 must be at least 1"), std::string::npos);
}

// ---- outputs over inputs (library: nothing is loaded) ----

TEST_F(Calibrate, OutputsThatWouldOverwriteAnInputAreRefused) {
  const std::string stats = out_.file("s.safetensors");
  auto msg = [&](CalibratePaths p) { return error_of([&] { check_calibrate_paths(p); }); };
  EXPECT_NE(msg({gguf(), text(), gguf(), ""}).find("-o/--output " + gguf() + " would overwrite the model " + gguf()),
            std::string::npos);
  const std::string weights = hf() + "/model.safetensors";
  EXPECT_NE(msg({hf(), text(), weights, ""}).find("would overwrite a file of the model directory " + hf()),
            std::string::npos);
  // Spelled differently, or through a link: the same file.
  EXPECT_NE(msg({hf(), text(), hf() + "/./model.safetensors", ""}).find("would overwrite a file of the model directory"),
            std::string::npos);
  fs::create_symlink(weights, out_.file("link.safetensors"));
  EXPECT_NE(msg({hf(), text(), out_.file("link.safetensors"), ""}).find("would overwrite a file of the model directory"),
            std::string::npos);
  EXPECT_NE(msg({hf(), text(), hf() + "/tokenizer.json", ""}).find("would overwrite a file of the model directory"),
            std::string::npos);
  EXPECT_NE(msg({gguf(), text(), text(), ""}).find("would overwrite the calibration input"), std::string::npos);
  EXPECT_NE(msg({gguf(), text(), stats, gguf()}).find("--dump-tokens " + gguf() + " would overwrite the model"),
            std::string::npos);
  EXPECT_NE(msg({gguf(), text(), stats, stats}).find("-o/--output and --dump-tokens name the same file"),
            std::string::npos);
  EXPECT_NE(msg({hf(), text(), hf(), ""}).find("would overwrite the model " + hf()), std::string::npos);
  // A new file inside the model directory harms nothing; stdin is no file.
  EXPECT_EQ(msg({hf(), "-", hf() + "/new.stats.safetensors", ""}), "");
  EXPECT_EQ(msg({gguf(), text(), stats, out_.file("tokens.txt")}), "");
}

TEST_F(Calibrate, Llama2cTokenizerBesideTheCheckpointIsAnInputToo) {
  const std::string shared = std::string(TRIATTN_SHARED_DIR) + "/models/stories260k";
  ASSERT_TRUE(fs::exists(shared + "/stories260K.bin")) << shared << " is missing: the test needs ../shared";
  copy_dir_files(shared, out_.path() / "stories");  // never risk the shared copy
  const std::string bin = (out_ / "stories/stories260K.bin").string(), tok = (out_ / "stories/tok512.bin").string();
  const std::string msg = error_of([&] { check_calibrate_paths({bin, text(), tok, ""}); });
  EXPECT_NE(msg.find("would overwrite the tokenizer beside the model " + bin), std::string::npos) << msg;
}

// ---- the command ----

TEST_F(Calibrate, CliRefusesToOverwriteItsInputsBeforeLoadingAnything) {
  // A "model" that is not one: the refusal must come first, so it names the overwrite.
  const std::string junk = out_.write("junk.gguf", "not a model at all");
  RunResult r = run_triattn({"calibrate", "-m", junk, "--input", text(), "-o", junk});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("would overwrite the model"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(junk), "not a model at all");

  const std::string before = slurp(hf() + "/model.safetensors");
  r = run_triattn({"calibrate", "-m", hf(), "--input", text(), "-o", hf() + "/model.safetensors"});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("would overwrite a file of the model directory"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(hf() + "/model.safetensors"), before);

  r = run_triattn({"calibrate", "-m", gguf(), "--input", text(), "-o", text()});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("would overwrite the calibration input"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(text()), kText + kText);
}

TEST_F(Calibrate, CliChecksTheOutputFolderBeforeTheRun) {
  const std::string junk = out_.write("junk.gguf", "not a model at all");
  const std::string missing = out_.file("no-such-folder/s.safetensors");
  RunResult r = run_triattn({"calibrate", "-m", junk, "--input", text(), "-o", missing});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("folder " + out_.file("no-such-folder") + " does not exist"), std::string::npos) << r.err;
  r = run_triattn({"calibrate", "-m", junk, "--input", text(), "-o", "/proc/s.safetensors"});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("cannot write the stats file in /proc"), std::string::npos) << r.err;
  r = run_triattn({"calibrate", "-m", junk, "--input", text(), "-o", out_.file("s.safetensors"), "--dump-tokens",
                   missing});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("cannot write the token list"), std::string::npos) << r.err;
}

TEST_F(Calibrate, CliRefusesEmptyAndOneTokenInputsAndWarnsOnShortOnes) {
  const std::string stats = out_.file("s.safetensors");
  RunResult r = run_triattn({"calibrate", "-m", gguf(), "--input", out_.write("empty.txt", ""), "-o", stats});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("gives 0 token(s) after BOS; at least 2 are needed"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(stats));
  r = run_triattn({"calibrate", "-m", gguf(), "--input", text(), "--max-tokens", "2", "-o", stats});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("gives 1 token(s) after BOS"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(stats));

  r = run_triattn({"calibrate", "-m", gguf(), "--input", text(), "-o", stats, "--dump-tokens", out_.file("t.txt")});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("calibrate: warning: only "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("statistics from fewer than " + std::to_string(kFewCalibrationTokens) + " tokens are noisy"),
            std::string::npos)
      << r.err;
  const LoadedStats l = read_stats_any(stats);
  EXPECT_LT(l.info.token_count, kFewCalibrationTokens);
  EXPECT_EQ(l.info.weights_fingerprint.size(), static_cast<size_t>(kWeightsFingerprintSize));
  for (const auto& e : fs::directory_iterator(out_.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
}

}  // namespace
}  // namespace triattn::test
