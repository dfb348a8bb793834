// The foreign statistics formats (calib/stats_formats.h): readers against fixtures written by
// an independent writer (tests/reference/stats_formats_ref.py, from each format's own writer),
// our writers against that script's own reader, round trips ours -> each format -> ours bit for
// bit, identity checks against a model, and an error naming the format and field for damage.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "calib/npy_array.h"
#include "calib/stats_file.h"
#include "calib/stats_file_kind.h"
#include "calib/stats_formats.h"
#include "calib/zip_reader.h"
#include "calib_test_util.h"
#include "formats/safetensors.h"

using namespace triattn;
using calib_test::temp_path;
using triattn::test::error_of;

namespace {

const std::string kFmtScript = std::string(TRIATTN_SOURCE_DIR) + "/tests/reference/stats_formats_ref.py";

// /usr/bin/python3: the script needs numpy, which the first python3 on PATH lacks.
std::string fmt_fixture(const std::string& format, const std::string& name, const std::string& mode = "good",
                        const std::string& extra = "") {
  const std::string out = temp_path(name);
  const std::string cmd =
      "/usr/bin/python3 " + kFmtScript + " make " + format + " " + out + " --mode " + mode + " " + extra;
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "fixture script failed: " << cmd;
  return out;
}

// Several fixtures of the default shape in one start of the script: {format, mode, file name}.
std::vector<std::string> fmt_fixtures(const std::vector<std::array<std::string, 3>>& specs) {
  std::string cmd = "/usr/bin/python3 " + kFmtScript + " batch";
  std::vector<std::string> paths;
  for (const auto& [format, mode, name] : specs) {
    paths.push_back(temp_path(name));
    cmd += " " + format + ":" + mode + ":" + paths.back();
  }
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "fixture script failed: " << cmd;
  return paths;
}

bool fmt_python_check(const std::string& format, const std::string& path, const std::string& extra = "") {
  const std::string cmd = "/usr/bin/python3 " + kFmtScript + " check " + format + " " + path + " " + extra;
  return std::system(cmd.c_str()) == 0;
}

// The script's values, as float32.
void fmt_expect_script_values(const HeadStats& s, int L, int H, int fc) {
  ASSERT_EQ(s.n_layers, L);
  ASSERT_EQ(s.n_heads, H);
  ASSERT_EQ(s.head_dim, 2 * fc);
  ASSERT_EQ(s.q_mean_real.size(), static_cast<size_t>(L * H * fc));
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h)
      for (int f = 0; f < fc; ++f) {
        const size_t i = (static_cast<size_t>(l) * H + h) * fc + f;
        EXPECT_EQ(s.q_mean_real[i], static_cast<float>(l + 0.1 * h + 0.01 * f)) << l << h << f;
        EXPECT_EQ(s.q_mean_imag[i], static_cast<float>(-(l + 0.1 * h) - 0.02 * f)) << l << h << f;
        EXPECT_EQ(s.q_abs_mean[i], static_cast<float>(2 + l + 0.1 * h + 0.01 * f)) << l << h << f;
      }
}

// Statistics with the script's values, and the identity of a llama-shaped model they fit.
HeadStats fmt_script_stats(int L, int H, int Hkv, int d) {
  HeadStats s;
  s.n_layers = L, s.n_heads = H, s.n_kv_heads = Hkv, s.head_dim = d;
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h)
      for (int f = 0; f < d / 2; ++f) {
        s.q_mean_real.push_back(static_cast<float>(l + 0.1 * h + 0.01 * f));
        s.q_mean_imag.push_back(static_cast<float>(-(l + 0.1 * h) - 0.02 * f));
        s.q_abs_mean.push_back(static_cast<float>(2 + l + 0.1 * h + 0.01 * f));
      }
  return s;
}

std::string fmt_read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void fmt_write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

const StatsFormat kForeign[] = {StatsFormat::OfficialPt, StatsFormat::TriaV1, StatsFormat::TriaV2, StatsFormat::MlxNpz};

}  // namespace

TEST(StatsFormats, TriaV1FixtureReadsWithItsIdentity) {
  for (const char* mode : {"good", "shuffled"}) {
    const LoadedStats l = read_stats_any(fmt_fixture("tria-v1", std::string("a_") + mode + ".triattention", mode,
                                                     "--theta 500000 --name Tiny-Llama"));
    EXPECT_EQ(l.format, StatsFormat::TriaV1);
    EXPECT_EQ(l.format_version, 1);
    fmt_expect_script_values(*l.stats, 2, 4, 4);
    EXPECT_EQ(l.stats->n_kv_heads, 2);
    EXPECT_EQ(l.info.n_kv_heads, 2);
    EXPECT_EQ(l.info.rope_theta, 500000.0);
    EXPECT_EQ(l.info.model_name, "Tiny-Llama");
    EXPECT_TRUE(l.info.architecture.empty());
    EXPECT_TRUE(l.info.weights_fingerprint.empty());
    EXPECT_TRUE(l.stats->k_mean_real.empty());
  }
}

TEST(StatsFormats, TriaV2FixtureReadsBothVersions) {
  const LoadedStats v2 = read_stats_any(fmt_fixture("tria-v2", "b.bin", "good", "--theta 1000000"));
  EXPECT_EQ(v2.format, StatsFormat::TriaV2);
  EXPECT_EQ(v2.format_version, 2);
  fmt_expect_script_values(*v2.stats, 2, 4, 4);
  EXPECT_EQ(v2.info.n_kv_heads, 2);
  EXPECT_EQ(v2.info.rope_theta, 1000000.0);
  EXPECT_EQ(v2.info.rope_attn_factor, 1.0);
  EXPECT_TRUE(v2.notes.empty());
  const LoadedStats v1 = read_stats_any(fmt_fixture("tria-v2", "b1.bin", "v1layout"));
  EXPECT_EQ(v1.format, StatsFormat::TriaV2);
  EXPECT_EQ(v1.format_version, 1);
  fmt_expect_script_values(*v1.stats, 2, 4, 4);
}

TEST(StatsFormats, TriaV2BudgetScalesAreNotedNotApplied) {
  const std::string path = fmt_fixture("tria-v2", "scales.bin", "scales");
  const LoadedStats l = read_stats_any(path);
  ASSERT_EQ(l.notes.size(), 1u);
  EXPECT_NE(l.notes[0].find("layer_budget_scales"), std::string::npos) << l.notes[0];
  ModelConfig c = calib_test::model_config("m", 2, 4, 2, 8);
  c.rope_theta = 10000;
  EXPECT_NO_THROW(load_stats(path, c));  // the scales are a note, not a refusal
}

TEST(StatsFormats, NpzFixtureReads) {
  const LoadedStats l = read_stats_any(fmt_fixture("npz", "c.npz", "good", "--layers 3 --heads 2 --head-dim 6"));
  EXPECT_EQ(l.format, StatsFormat::MlxNpz);
  EXPECT_TRUE(l.official_pt);
  fmt_expect_script_values(*l.stats, 3, 2, 3);
  EXPECT_EQ(l.stats->n_kv_heads, 0);  // not recorded: the model supplies it
  EXPECT_EQ(sniff_stats_file(temp_path("c.npz")).kind, StatsFileKind::NumpyZip);
}

TEST(StatsFormats, OurWritersMatchTheIndependentReaders) {
  HeadStats s = fmt_script_stats(2, 4, 2, 8);
  StatsInfo i;
  i.model_name = "tiny-llama";
  i.n_layers = 2, i.n_heads = 4, i.head_dim = 8;
  i.n_kv_heads = 2;
  i.rope_theta = 10000;
  i.rope_attn_factor = 1;
  i.source_format = "tria-v1";  // as read from a foreign file: rope_freqs and the rest unknown
  for (const auto& [format, name] : {std::pair{StatsFormat::TriaV1, "w.triattention"}, {StatsFormat::TriaV2, "w.bin"},
                                     {StatsFormat::MlxNpz, "w.npz"}}) {
    const std::string path = temp_path(name);
    write_stats_as(format, path, s, i);
    EXPECT_TRUE(fmt_python_check(stats_format_name(format), path)) << name;
  }
}

TEST(StatsFormats, RoundTripOursThroughEachFormatIsBitIdentical) {
  const ModelConfig c = calib_test::model_config("round-trip", 3, 4, 2, 16);
  const HeadStats s = calib_test::random_stats(c, 7);
  const StatsInfo info = stats_info_for(c, 100, 42);
  const std::string ours = temp_path("rt.safetensors");
  write_stats_file(ours, s, info);
  for (StatsFormat f : kForeign) {
    const std::string mid = temp_path(std::string("rt") + stats_format_info(f).extension);
    const std::string back = temp_path(std::string("rt_back_") + stats_format_name(f) + ".safetensors");
    const LoadedStats a = read_stats_any(ours);
    write_stats_as(f, mid, *a.stats, a.info);
    const LoadedStats m = read_stats_any(mid);
    EXPECT_EQ(m.format, f);
    write_stats_as(StatsFormat::Triattn, back, *m.stats, m.info);
    const LoadedStats b = read_stats_any(back);
    EXPECT_EQ(b.info.source_format, stats_format_name(f));
    EXPECT_EQ(b.stats->n_layers, s.n_layers);
    EXPECT_EQ(b.stats->n_heads, s.n_heads);
    EXPECT_EQ(b.stats->head_dim, s.head_dim);
    // Bit for bit: memcmp, so that -0.0 and NaN payloads would count too.
    for (const auto& [got, want] : {std::pair{&b.stats->q_mean_real, &s.q_mean_real},
                                    {&b.stats->q_mean_imag, &s.q_mean_imag}, {&b.stats->q_abs_mean, &s.q_abs_mean}}) {
      ASSERT_EQ(got->size(), want->size()) << stats_format_name(f);
      EXPECT_EQ(std::memcmp(got->data(), want->data(), 4 * want->size()), 0) << stats_format_name(f);
    }
    const bool has_kv = f == StatsFormat::TriaV1 || f == StatsFormat::TriaV2;
    EXPECT_EQ(b.stats->n_kv_heads, has_kv ? 2 : 0) << stats_format_name(f);
    EXPECT_EQ(b.info.rope_theta, has_kv ? c.rope_theta : 0.0) << stats_format_name(f);
    EXPECT_TRUE(b.stats->k_mean_real.empty());
    EXPECT_TRUE(b.info.architecture.empty());
    // The converted file still loads against the model, and the identity warning says why.
    EXPECT_NO_THROW(load_stats(back, c)) << stats_format_name(f);
  }
}

TEST(StatsFormats, ConvertedFileRecordsOnlyWhatTheSourceKnew) {
  const std::string path = temp_path("conv.safetensors");
  const LoadedStats t = read_stats_any(fmt_fixture("tria-v1", "conv.triattention"));
  write_stats_as(StatsFormat::Triattn, path, *t.stats, t.info);
  auto f = SafetensorsFile::open(path);
  const auto& m = f->metadata();
  EXPECT_EQ(m.at("source_format"), "tria-v1");
  EXPECT_EQ(m.at("n_kv_heads"), "2");
  EXPECT_EQ(m.at("rope_theta"), "10000");
  for (const char* absent : {"architecture", "token_count", "input_hash", "rope_scaling", "rope_attn_factor"})
    EXPECT_EQ(m.count(absent), 0u) << absent;
  for (const auto& tensor : f->tensors()) EXPECT_FALSE(tensor.name.starts_with("k_")) << tensor.name;
}

TEST(StatsFormats, IdentityIsCheckedWhereTheFormatRecordsIt) {
  const std::string v1 = fmt_fixture("tria-v1", "id.triattention", "good", "--theta 10000");
  ModelConfig c = calib_test::model_config("m", 2, 4, 2, 8);
  c.rope_theta = 10000;
  EXPECT_NO_THROW(load_stats(v1, c));
  ModelConfig other_kv = c;
  other_kv.n_kv_heads = 4;
  EXPECT_NE(error_of([&] { load_stats(v1, other_kv); }).find("n_kv_heads 2 (model: 4)"), std::string::npos);
  ModelConfig other_theta = c;
  other_theta.rope_theta = 500000;
  EXPECT_NE(error_of([&] { load_stats(v1, other_theta); }).find("rope_theta 10000 (model: 500000)"), std::string::npos);
  ModelConfig other_shape = c;
  other_shape.n_layers = 3;
  EXPECT_NE(error_of([&] { load_stats(v1, other_shape); }).find("n_layers 2 (model: 3)"), std::string::npos);
  // The .npz records no KV heads: any count fits, and the model's is used.
  const std::string npz = fmt_fixture("npz", "id.npz");
  EXPECT_EQ(load_stats(npz, other_kv)->n_kv_heads, 4);
  ModelConfig partial = c;
  partial.rotary_dim = 4;
  EXPECT_NE(error_of([&] { load_stats(npz, partial); }).find("official MLX .npz format holds no statistics of the unrotated"),
            std::string::npos);
}

TEST(StatsFormats, DamagedFilesAreRefusedNamingFormatAndField) {
  const std::vector<std::string> paths = fmt_fixtures({
      {"tria-v1", "truncated", "d1.triattention"},
      {"tria-v2", "truncated", "d2.bin"},
      {"tria-v1", "interleaved", "d3.triattention"},
      {"tria-v1", "zero_head", "d4.triattention"},
      {"tria-v2", "zero_head", "d5.bin"},
      {"tria-v1", "missing_head", "d6.triattention"},
      {"tria-v2", "reserved", "d7.bin"},
      {"npz", "placeholder", "d8.npz"},
      {"npz", "missing_head", "d9.npz"},
      {"npz", "extra_entry", "d10.npz"},
      {"tria-v2", "good", "d11.bin"},
      {"tria-v1", "good", "d12.triattention"},
      {"tria-v2", "good", "d13.bin"},
  });
  const char* want[] = {
      "fits neither version-1 layout",
      "truncated TRIA v2 (triattention-ggml) file: field 'layer 1 head 3 mrl'",
      "rope_style 1 (interleaved bands",
      "TRIA v1 (.triattention) file layer 1 head 3 holds only zeros",
      "layer 1 head 3 holds only zeros",
      "has no statistics for layer 1 head 3",
      "nonzero byte in its 'reserved' header field (byte 39)",
      "an MLX placeholder without statistics ('calibrated' is False",
      "has no statistics for layer 1 head 3",
      "entry 'model_type.npy' is not part of the MLX statistics layout",
  };
  for (size_t k = 0; k < std::size(want); ++k) {
    const std::string e = error_of([&] { read_stats_any(paths[k]); });
    EXPECT_NE(e.find(want[k]), std::string::npos) << paths[k] << ": " << e;
    EXPECT_EQ(e.rfind(paths[k], 0), 0u) << "the message starts with the path: " << e;
  }
  // A version this build does not know, and a field out of range.
  std::string bytes = fmt_read_file(paths[10]);
  bytes[4] = 3;
  fmt_write_file(temp_path("d11.bin"), bytes);
  EXPECT_NE(error_of([&] { read_stats_any(temp_path("d11.bin")); }).find("TRIA version 3 is not supported"), std::string::npos);
  bytes = fmt_read_file(paths[11]);
  const double nan = std::nan("");
  std::memcpy(bytes.data() + 24, &nan, 8);
  fmt_write_file(temp_path("d12.triattention"), bytes);
  EXPECT_NE(error_of([&] { read_stats_any(temp_path("d12.triattention")); }).find("field 'rope_theta' is nan"),
            std::string::npos);
  // A NaN in the statistics is placed by layer, head and band.
  bytes = fmt_read_file(paths[12]);
  const float fnan = std::nanf("");
  std::memcpy(bytes.data() + 64 + 2 * 4 + 4 * 4 * 4 * 1 + 4 * 2, &fnan, 4);  // layer 0 head 1, q_mean_real band 2
  fmt_write_file(temp_path("d13.bin"), bytes);
  EXPECT_NE(error_of([&] { read_stats_any(temp_path("d13.bin")); }).find("'q_mean_real' holds nan at layer 0, head 1, band 2"),
            std::string::npos);
}

TEST(StatsFormats, NpyHeadersAreParsedStrictly) {
  auto npy = [](const std::string& header, size_t data_bytes) {
    std::string h = header;
    while ((10 + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::string b = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size()) + static_cast<char>(h.size() >> 8) + h;
    b.append(data_bytes, '\0');
    return std::vector<uint8_t>(b.begin(), b.end());
  };
  EXPECT_EQ(parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12), "x").shape,
            (std::vector<int64_t>{3}));
  EXPECT_NE(error_of([&] { parse_npy(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 12), "x"); })
                .find("type '>f4'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_npy(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", 12), "x"); })
                .find("Fortran-order"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8), "x"); })
                .find("holds 8 bytes, its shape and type need 12"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_npy(npy("{'descr': '<f4', 'extra': 1, 'shape': (3,), }", 12), "x"); })
                .find("unknown key 'extra'"),
            std::string::npos);
  const std::vector<float> v = {1.5f, -2.0f};
  const std::vector<uint8_t> b = npy_f32_bytes(v);
  EXPECT_EQ((10 + b[8]) % 64, 0);
  EXPECT_EQ(npy_floats(parse_npy(b, "x"), "x"), v);
}

TEST(StatsFormats, ForeignWritersRefuseWhatTheyCannotHold) {
  ModelConfig c = calib_test::model_config("partial", 2, 4, 2, 16);
  c.rotary_dim = 8;
  HeadStats s = calib_test::random_stats(c, 3);
  s.rotary_dim = 8;
  const size_t n = s.q_mean_real.size() / 2;  // random_stats filled head_dim/2 bands; keep rotary_dim/2
  s.q_mean_real.resize(n), s.q_mean_imag.resize(n), s.q_abs_mean.resize(n);
  s.k_mean_real.resize(s.k_mean_real.size() / 2), s.k_mean_imag.resize(s.k_mean_imag.size() / 2);
  s.k_abs_mean.resize(s.k_abs_mean.size() / 2);
  s.q_pass_mean.assign(2 * 4 * 8, 0.5f);
  s.q_pass_abs_mean.assign(2 * 4, 1.0f);
  const StatsInfo info = stats_info_for(c, 100, 1);
  for (StatsFormat f : kForeign)
    EXPECT_NE(error_of([&] { write_stats_as(f, temp_path("p.out"), s, info); }).find("(partial RoPE)"), std::string::npos)
        << stats_format_name(f);
  // A .pt source knows no KV heads, which TRIA records.
  const LoadedStats pt = read_stats_any(fmt_fixture("npz", "nokv.npz"));
  EXPECT_NE(error_of([&] { write_stats_as(StatsFormat::TriaV1, temp_path("nokv.triattention"), *pt.stats, pt.info); })
                .find("records the KV head count, which the statistics being written do not know"),
            std::string::npos);
}

TEST(StatsFormats, NamesAndExtensions) {
  for (const StatsFormatInfo& f : stats_formats()) {
    EXPECT_EQ(parse_stats_format(f.name), f.format);
    EXPECT_EQ(stats_format_for_path(std::string("x") + f.extension), f.format);
  }
  EXPECT_NE(error_of([] { parse_stats_format("gguf"); }).find("known: triattn, pt, tria-v1, tria-v2, npz"),
            std::string::npos);
  EXPECT_NE(error_of([] { stats_format_for_path("x.json"); }).find("name it with --to"), std::string::npos);
}
