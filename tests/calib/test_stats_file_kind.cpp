// --stats given a GGUF, a model directory, a model's own safetensors, a
// text, an empty or truncated file is refused as "not a triattn stats file (it is ...)",
// not with whatever the safetensors parser trips over first.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "calib/stats_file.h"
#include "calib/stats_file_kind.h"
#include "calib_test_util.h"

using namespace triattn;
using triattn::test::error_of;
using calib_test::temp_path;

namespace {

const std::string kTiny = std::string(TRIATTN_SHARED_DIR) + "/models/tinystories-656k";
const ModelConfig kCfg = calib_test::model_config("m", 2, 4, 2, 8);

std::string write_bytes(const std::string& name, const std::string& bytes) {
  const std::string p = temp_path(name);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  return p;
}

void expect_refused(const std::string& path, const std::string& expect) {
  const std::string msg = error_of([&] { load_stats(path, kCfg); });
  EXPECT_NE(msg.find(path + ": "), std::string::npos) << msg;
  EXPECT_NE(msg.find(expect), std::string::npos) << msg;
  EXPECT_EQ(msg.find("header length"), std::string::npos) << msg;  // the old misleading message
}

}  // namespace

TEST(StatsFileKind, ModelFilesAreNamedForWhatTheyAre) {
  const std::string gguf = kTiny + "/TinyStories-656K-Q8_0.gguf";
  ASSERT_TRUE(std::filesystem::exists(gguf)) << gguf << " is missing: the test needs ../shared";
  EXPECT_EQ(sniff_stats_file(gguf).kind, StatsFileKind::Gguf);
  expect_refused(gguf, "not a triattn stats file (it is a GGUF model file; stats files come from `triattn calibrate`");
  expect_refused(kTiny, "not a triattn stats file (it is a directory");
  // The HF model's weights are a safetensors file too, without our format metadata.
  expect_refused(kTiny + "/model.safetensors", "not a triattn stats file (a safetensors file whose metadata 'format'");
  expect_refused(kTiny + "/config.json", "not a triattn stats file (it is neither a safetensors file nor a torch .pt");
  expect_refused(write_bytes("v2.bin", std::string("ak42\x02\0\0\0", 8) + std::string(64, '\0')),
                 "it is a llama2.c model checkpoint");
}

TEST(StatsFileKind, OtherNonStatsFilesAreRefusedClearly) {
  expect_refused(write_bytes("empty.safetensors", ""), "not a triattn stats file (the file is empty");
  expect_refused(write_bytes("text.safetensors", "q_mean_real = 1, 2, 3\n"), "neither a safetensors file nor a torch .pt");
  // Legacy torch.save: a bare pickle (PROTO 2, then torch's magic number as a LONG1).
  expect_refused(write_bytes("legacy.pt", std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 14)),
                 "legacy, pre-1.6 format");
  const std::string zip = temp_path("other.zip");
  const std::string cmd = "python3 -c \"import zipfile; zipfile.ZipFile('" + zip + "', 'w').writestr('a.txt', 'hi')\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  expect_refused(zip, "not a triattn stats file (a zip archive without data.pkl");
  const std::string fifo = temp_path("fifo.safetensors");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(fifo, "it is not a regular file");  // and does not block reading it
  expect_refused(temp_path("missing.safetensors"), "cannot open stats file: No such file or directory");
}

TEST(StatsFileKind, TruncatedStatsFileSaysTruncated) {
  const std::string good = temp_path("kind_good.safetensors");
  write_stats_file(good, calib_test::random_stats(kCfg, 1), stats_info_for(kCfg, 100, 1));
  EXPECT_EQ(sniff_stats_file(good).kind, StatsFileKind::Safetensors);
  // Cut inside the JSON header: the length still says more than the file has.
  const std::string cut = temp_path("kind_cut.safetensors");
  std::filesystem::copy_file(good, cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, 100);
  EXPECT_EQ(sniff_stats_file(cut).kind, StatsFileKind::TruncatedSafetensors);
  expect_refused(cut, "truncated stats file (its safetensors header says");
}
