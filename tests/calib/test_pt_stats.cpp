// The official implementation's .pt stats (torch zip + pickle), via a fixture written at test
// time by tests/reference/triattention_make_pt.py (stdlib only, the opcodes torch.save emits).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "calib/pt_stats.h"
#include "calib/stats_file.h"
#include "calib_test_util.h"

using namespace triattn;
using triattn::test::error_of;
using calib_test::temp_path;

namespace {

std::string make_pt(const std::string& name, const std::string& mode, const std::string& extra = "") {
  const std::string out = temp_path(name);
  const std::string cmd = "python3 " + std::string(TRIATTN_SOURCE_DIR) + "/tests/reference/triattention_make_pt.py " +
                          out + " --mode " + mode + " " + extra;
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "fixture script failed: " << cmd;
  return out;
}

ModelConfig pt_config(int L, int H, int Hkv, int d) {
  ModelConfig c;
  c.arch = "llama";
  c.n_layers = L, c.n_heads = H, c.n_kv_heads = Hkv, c.head_dim = d;
  return c;
}

}  // namespace

TEST(PtStats, OfficialFileLoadsWithStridedAndHalfStorages) {
  const PtStats pt = read_pt_stats(make_pt("stats.pt", "good"));
  const HeadStats& s = pt.stats;
  EXPECT_EQ(pt.rope_style, "half");
  ASSERT_EQ(s.n_layers, 2);
  ASSERT_EQ(s.n_heads, 4);
  ASSERT_EQ(s.head_dim, 8);
  ASSERT_EQ(s.q_mean_real.size(), 2u * 4 * 4);
  EXPECT_TRUE(s.k_mean_real.empty());
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h)
      for (int f = 0; f < 4; ++f) {
        const size_t i = (static_cast<size_t>(l) * 4 + h) * 4 + f;
        // Same double expressions as the script, rounded to float32 as torch stores them.
        EXPECT_EQ(s.q_mean_real[i], static_cast<float>(l + 0.1 * h + 0.01 * f)) << l << h << f;
        EXPECT_EQ(s.q_mean_imag[i], static_cast<float>(-(l + 0.1 * h) - 0.02 * f)) << l << h << f;
        const float abs = (l == 1 && h == 1) ? 0.5f + f / 8.0f : static_cast<float>(2 + l + 0.1 * h + 0.01 * f);
        EXPECT_EQ(s.q_abs_mean[i], abs) << l << h << f;
      }
}

TEST(PtStats, LoadStatsValidatesAgainstTheModelAndFillsKvHeads) {
  const std::string path = make_pt("model.pt", "good");
  auto s = load_stats(path, pt_config(2, 4, 2, 8));
  EXPECT_EQ(s->n_kv_heads, 2);
  EXPECT_EQ(s->q_abs_mean.size(), 32u);
  const std::string msg = error_of([&] { load_stats(path, pt_config(2, 8, 4, 16)); });
  EXPECT_NE(msg.find("n_heads 4 (model: 8)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("head_dim 8 (model: 16)"), std::string::npos) << msg;
}

TEST(PtStats, LargerShapesLoad) {
  const PtStats pt = read_pt_stats(make_pt("big.pt", "good", "--layers 3 --heads 12 --head-dim 64"));
  EXPECT_EQ(pt.stats.n_layers, 3);
  EXPECT_EQ(pt.stats.n_heads, 12);
  EXPECT_EQ(pt.stats.head_dim, 64);
  EXPECT_EQ(pt.stats.q_mean_real[(2 * 12 + 11) * 32 + 31], static_cast<float>(2 + 0.1 * 11 + 0.01 * 31));
}

TEST(PtStats, MalformedFilesAreClearErrors) {
  struct Case {
    const char* mode;
    const char* expect;
  } cases[] = {
      {"deflate", "compressed"},
      {"evil_global", "refusing pickle global"},
      {"missing_head", "has no statistics for layer 1 head 3"},
      {"truncated", "truncated"},
      {"bad_crc", "CRC"},
      {"not_stats", "no \"stats\" dict"},
  };
  for (const Case& c : cases) {
    const std::string path = make_pt(std::string("bad_") + c.mode + ".pt", c.mode);
    const std::string msg = error_of([&] { read_pt_stats(path); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.mode << ": " << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << c.mode << ": " << msg;
  }
}

TEST(PtStats, NonZipAndEmptyFilesAreErrors) {
  const std::string junk = temp_path("junk.pt");
  std::ofstream(junk, std::ios::binary) << "PK\x03\x04 but nothing after";
  EXPECT_THROW(read_pt_stats(junk), Error);
  EXPECT_THROW(load_stats(junk, pt_config(2, 4, 2, 8)), Error);
  const std::string empty = temp_path("empty.pt");
  std::ofstream(empty, std::ios::binary).flush();
  EXPECT_THROW(load_stats(empty, pt_config(2, 4, 2, 8)), Error);
}

// Two keys for one head ("layer00_head03" twice, or "layer0_head3" beside it) used to keep
// the last silently; keys outside the grammar or the index range are refused.
TEST(PtStats, DuplicateAndMalformedHeadKeysAreRefused) {
  const std::string dup = make_pt("dup.pt", "good");
  calib_test::patch_zip_bytes(dup, "data.pkl", "layer01_head03", "layer00_head03");
  std::string msg = error_of([&] { read_pt_stats(dup); });
  EXPECT_NE(msg.find("stats['layer00_head03'] names layer 0 head 3 a second time"), std::string::npos) << msg;
  const std::string neg = make_pt("neg.pt", "good");
  calib_test::patch_zip_bytes(neg, "data.pkl", "layer01_head03", "layer-1_head03");
  msg = error_of([&] { read_pt_stats(neg); });
  EXPECT_NE(msg.find("unexpected stats key 'layer-1_head03'"), std::string::npos) << msg;
}

TEST(PtStats, NonFiniteValuesAreCheckedHereToo) {
  const std::string p = make_pt("inf.pt", "good");
  const float re = static_cast<float>(1 + 0.1 * 2 + 0.01 * 3);  // layer 1, head 2, band 3
  const float inf = std::numeric_limits<float>::infinity();
  calib_test::patch_zip_bytes(p, "/data/", std::string(reinterpret_cast<const char*>(&re), 4),
                              std::string(reinterpret_cast<const char*>(&inf), 4));
  const std::string msg = error_of([&] { read_pt_stats(p); });
  EXPECT_NE(msg.find("tensor 'q_mean_real' holds inf at layer 1, head 2, band 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
}
