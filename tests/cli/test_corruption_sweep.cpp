// The systematic corruption sweep (docs/reliability.md): every truncation point and
// bit flip of the small shared model, statistics and tokenizer files, sampled so the test
// stays fast: EVERY byte of each file's structural part (header, metadata, tensor table,
// JSON) is flipped and cut at, and a fixed stride covers the rest (the weights). Each mutated
// file must either be refused with a triattn::Error that names the file, or load and run
// normally (the flip only touched weights). A stride of the cases also goes through the real
// binary, which must exit 0, or exit 1 with "error:" on stderr: never crash, hang or abort.
// A sanitized build runs every third case (kSweepStride).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "calib/stats_file.h"
#include "cli_run.h"
#include "common/sanitizer_size.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/kv_setup.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "kv/policy.h"
#include "model/forward.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

using namespace triattn;
using triattn::test::run_triattn;
using triattn::test::shared_path;
using triattn::test::slurp;

namespace {

namespace fs = std::filesystem;

struct Mutation {
  std::string what;   // "truncated to 100 bytes", "bit 3 of byte 17 flipped"
  std::string bytes;  // the whole mutated file
};

// Offsets [lo, hi) of a file, each one (points = 0) or `points` of them evenly spaced.
struct Range {
  size_t lo, hi, points;
};

// A truncation and a bit flip at each offset the ranges give (all 8 bits for the first 16
// bytes of the file, one bit rotating with the offset after that), plus a cut of the last byte.
std::vector<Mutation> sweep_ranges(const std::string& orig, const std::vector<Range>& ranges) {
  std::vector<Mutation> out;
  const size_t n = orig.size();
  std::vector<size_t> at;
  for (const Range& r : ranges) {
    const size_t lo = std::min(r.lo, n), hi = std::min(r.hi, n);
    if (hi <= lo) continue;
    const size_t stride = r.points ? std::max<size_t>(1, (hi - lo) / r.points) : 1;
    for (size_t i = lo; i < hi; i += stride) at.push_back(i);
  }
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  for (size_t len : at) out.push_back({"truncated to " + std::to_string(len) + " bytes", orig.substr(0, len)});
  if (n) out.push_back({"truncated to " + std::to_string(n - 1) + " bytes", orig.substr(0, n - 1)});
  auto flip = [&](size_t i, int bit) {
    std::string b = orig;
    b[i] = static_cast<char>(b[i] ^ (1 << bit));
    out.push_back({"bit " + std::to_string(bit) + " of byte " + std::to_string(i) + " flipped", std::move(b)});
  };
  for (size_t k = 0; k < at.size(); ++k) {
    const size_t i = at[k];
    if (i < 16) {
      for (int bit = 0; bit < 8; ++bit) flip(i, bit);
    } else {
      flip(i, static_cast<int>(k % 8));
    }
  }
  return out;
}

// Every byte below `every`, `mid_points` over [every, header), `rest_points` over the rest.
std::vector<Mutation> sweep(const std::string& orig, size_t every, size_t header, size_t mid_points,
                            size_t rest_points) {
  const size_t n = orig.size();
  header = std::min(header, n);
  every = std::min(every, header);
  return sweep_ranges(orig, {{0, every, 0}, {every, header, mid_points}, {header, n, rest_points}});
}
// Every byte below `header`, `rest_points` over the rest.
std::vector<Mutation> sweep(const std::string& orig, size_t header, size_t rest_points) {
  return sweep(orig, header, header, 0, rest_points);
}

struct Tally {
  int refused = 0, loaded = 0, refused_at_run = 0;
  std::map<std::string, int> first_words;  // for the log: what kinds of errors came out
};

void note(Tally& t, const std::string& msg) {
  const size_t colon = msg.find(": ");
  std::string key = colon == std::string::npos ? msg : msg.substr(colon + 2, 40);
  ++t.first_words[key];
}

void report(const std::string& name, size_t cases, const Tally& t) {
  std::printf("[sweep] %s: %zu cases, %d refused by name, %d loaded and ran, %d refused while running\n", name.c_str(),
              cases, t.refused, t.loaded, t.refused_at_run);
}

// Loads the model at `path` (`file` is the mutated one, which the error must name) and, when
// it loads, generates 2 tokens greedily: a normal run.
void check_model(const std::string& path, const std::string& file, const Mutation& m, Tally& t) {
  std::shared_ptr<const Model> model;
  try {
    LoadOptions opt;
    opt.repack = false;
    opt.threads = 1;
    model = Model::load(path, opt);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(file), std::string::npos) << m.what << ": the error does not name " << file << ": " << msg;
    ++t.refused;
    note(t, msg);
    return;
  }
  try {
    Forward fwd(*model, nullptr);
    KvSettings kv;
    PolicyFactory policies(*model, kv);
    const std::vector<int32_t> prompt = model->tokenizer().encode("Once upon a time", true);
    SamplerParams sp;
    sp.temperature = 0;
    const GenerateResult r = generate_fresh(*model, fwd, policies, prompt, 2, sp);
    EXPECT_EQ(r.tokens.size(), 2u) << m.what;
    for (int32_t id : r.tokens) EXPECT_TRUE(id >= 0 && id < model->tokenizer().vocab_size()) << m.what;
    ++t.loaded;
  } catch (const Error& e) {
    // A flip that made a weight NaN/Inf can only show once it reaches the logits.
    ++t.refused_at_run;
    note(t, e.what());
  }
}

// The binary on every `every`-th case: exit 0, or exit 1 with a message.
void check_cli(const std::vector<std::string>& args, const Mutation& m) {
  const auto r = run_triattn(args);
  EXPECT_TRUE(r.rc == 0 || (r.rc == 1 && r.err.find("error:") != std::string::npos))
      << m.what << ": exit " << r.rc << "\n" << r.err.substr(0, 2000);
}

// One scratch directory for the whole binary, removed at exit.
fs::path scratch_root() {
  static const triattn::test::ScratchDir dir;
  return dir.path();
}

void write_bytes(const fs::path& p, const std::string& bytes) { triattn::test::write_file(p, bytes); }

// The data section start of a GGUF: everything before it is structure.
size_t gguf_header_bytes(const std::string& path) {
  auto g = GgufFile::open(path);
  size_t start = g->file().size();
  for (const auto& t : g->tensors())
    start = std::min(start, static_cast<size_t>(static_cast<const uint8_t*>(t.data) - g->file().data()));
  return start;
}

size_t safetensors_header_bytes(const std::string& bytes) {
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return static_cast<size_t>(8 + n);
}

std::string require(const std::string& path) {
  EXPECT_TRUE(fs::exists(path)) << path << " is missing (../shared must be beside the repository)";
  std::string s = slurp(path);
  if (s.empty()) ADD_FAILURE() << path << " is empty or unreadable";
  return s;
}

constexpr size_t kCliEvery = 37;  // every 37th case also through the binary
// Every case in a plain build; every third in a sanitized one (each case costs ~10x there).
// Truncations and flips alternate along the file, so every third still reaches every part.
constexpr size_t kSweepStride = triattn::test::sanitizer_size<size_t>(1, 3);
size_t cases_run(size_t cases) { return (cases + kSweepStride - 1) / kSweepStride; }

void sweep_llama2c(const std::string& name, size_t header) {
  const std::string orig = require(shared_path("models/stories260k/" + name));
  const std::string tok = require(shared_path("models/stories260k/tok512.bin"));
  ASSERT_FALSE(orig.empty());
  const fs::path dir = scratch_root() / ("l2c-" + name);
  fs::create_directories(dir);
  write_bytes(dir / "tok512.bin", tok);
  const std::string file = (dir / name).string();
  const auto cases = sweep(orig, header, 200);
  Tally t;
  for (size_t i = 0; i < cases.size(); i += kSweepStride) {
    write_bytes(file, cases[i].bytes);
    check_model(file, file, cases[i], t);
    if (i % kCliEvery == 0) check_cli({"generate", "-m", file, "-p", "Once", "-n", "2", "-t", "1"}, cases[i]);
  }
  report(name, cases_run(cases.size()), t);
  EXPECT_GT(t.refused, 0);
  EXPECT_GT(t.loaded, 0);
}

}  // namespace

TEST(CorruptionSweep, Llama2cFp32Checkpoint) { sweep_llama2c("stories260K.bin", 28); }

TEST(CorruptionSweep, Llama2cInt8Checkpoint) { sweep_llama2c("stories260K_q80.bin", 256); }

TEST(CorruptionSweep, GgufModel) {
  const std::string src = shared_path("models/tinystories-656k/TinyStories-656K-Q8_0.gguf");
  const std::string orig = require(src);
  ASSERT_FALSE(orig.empty());
  const size_t header = gguf_header_bytes(src);
  const fs::path dir = scratch_root() / "gguf";
  fs::create_directories(dir);
  const std::string file = (dir / "model.gguf").string();
  // The metadata holds the whole vocabulary: every byte of its first 2 KiB (magic, counts,
  // the first keys), 600 points over the rest of the structure and 200 over the weights.
  const auto cases = sweep(orig, 2048, header, 600, 200);
  Tally t;
  for (size_t i = 0; i < cases.size(); i += kSweepStride) {
    write_bytes(file, cases[i].bytes);
    check_model(file, file, cases[i], t);
    if (i % kCliEvery == 0) check_cli({"generate", "-m", file, "-p", "Once", "-n", "2", "-t", "1"}, cases[i]);
  }
  report("TinyStories-656K-Q8_0.gguf", cases_run(cases.size()), t);
  EXPECT_GT(t.refused, 0);
  EXPECT_GT(t.loaded, 0);
}

TEST(CorruptionSweep, HfCheckpoint) {
  const fs::path src = shared_path("models/tinystories-656k");
  const fs::path dir = scratch_root() / "hf";
  fs::create_directories(dir);
  std::map<std::string, std::string> orig;
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                        "special_tokens_map.json", "generation_config.json"}) {
    orig[f] = require((src / f).string());
  }
  auto restore = [&] {
    for (const auto& [name, bytes] : orig) write_bytes(dir / name, bytes);
  };
  Tally total;
  size_t n_cases = 0;
  struct Part {
    const char* name;
    size_t every, header, mid;  // every byte below `every`, `mid` points up to `header`, 200 after
  };
  const Part parts[] = {{"config.json", orig["config.json"].size(), 0, 0},
                        {"model.safetensors", 1024, safetensors_header_bytes(orig["model.safetensors"]), 400},
                        {"tokenizer.json", 0, 0, 0}};
  for (const Part& p : parts) {
    const std::string file = (dir / p.name).string();
    const auto cases = sweep(orig[p.name], p.every, std::max(p.every, p.header), p.mid, 200);
    n_cases += cases_run(cases.size());
    restore();
    for (size_t i = 0; i < cases.size(); i += kSweepStride) {
      write_bytes(file, cases[i].bytes);
      // A field of config.json that disagrees with the tensors is named by the tensor, with
      // the model directory: the message holds the directory, not always this file.
      check_model(dir.string(), dir.string(), cases[i], total);
      if (i % kCliEvery == 0) check_cli({"generate", "-m", dir.string(), "-p", "Once", "-n", "2", "-t", "1"}, cases[i]);
    }
  }
  report("tinystories-656k (HF)", n_cases, total);
  EXPECT_GT(total.refused, 0);
  EXPECT_GT(total.loaded, 0);
}

namespace {

// A tokenizer file: refused naming the file, or loads and encodes/decodes.
void sweep_tokenizer(const std::string& label, const std::string& src, const std::string& dst_name,
                     size_t every, size_t points, size_t step, size_t header = 0) {
  const std::string orig = require(src);
  ASSERT_FALSE(orig.empty());
  const fs::path dir = scratch_root() / ("tok-" + label);
  fs::create_directories(dir);
  const std::string file = (dir / dst_name).string();
  const auto all = header ? sweep(orig, every, header, points, 0) : sweep(orig, every, points);
  Tally t;
  size_t n = 0;
  for (size_t i = 0; i < all.size(); i += step * kSweepStride) {
    const Mutation& m = all[i];
    ++n;
    write_bytes(file, m.bytes);
    try {
      auto tok = load_tokenizer_any(file);
      const auto ids = tok->encode("Once upon a time, <s> Ünïcode 🙂", true, true);
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->vocab_size()) << m.what;
      (void)tok->decode(ids);
      ++t.loaded;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(file), std::string::npos) << m.what << ": the error does not name " << file << ": " << msg;
      ++t.refused;
    }
  }
  report(label, n, t);
  EXPECT_GT(t.refused, 0);
}

}  // namespace

TEST(CorruptionSweep, Llama2cTokenizer) {
  // tok512.bin: 6 KiB, every byte and every truncation point.
  sweep_tokenizer("tok512.bin", shared_path("models/stories260k/tok512.bin"), "tok512.bin", SIZE_MAX, 0, 1);
}

TEST(CorruptionSweep, TokenizerJson) {
  // bytelm-2k's tokenizer.json (6 KiB): every other case of every byte and truncation point.
  sweep_tokenizer("bytelm-2k tokenizer.json", shared_path("models/bytelm-2k/tokenizer.json"), "tokenizer.json",
                  SIZE_MAX, 0, 2);
}

TEST(CorruptionSweep, GgufVocabulary) {
  // A vocabulary-only GGUF: the first KiB byte by byte (header, counts, the first keys),
  // 300 points over the rest (all of it metadata).
  sweep_tokenizer("ggml-vocab-llama-spm.gguf", shared_path("tokenizers/ggml-vocab-llama-spm.gguf"), "vocab.gguf",
                  1024, 300, 1, SIZE_MAX);
}

TEST(CorruptionSweep, StatsFiles) {
  // A stats file for stories260k written by the library, and the official .pt format for
  // the same shape; every byte and truncation point of each.
  LoadOptions opt;
  opt.repack = false;
  opt.threads = 1;
  const std::string model_path = shared_path("models/stories260k/stories260K.bin");
  require(model_path);
  auto model = Model::load(model_path, opt);
  const ModelConfig& c = model->config();
  const fs::path dir = scratch_root() / "stats";
  fs::create_directories(dir);
  HeadStats s;
  s.n_layers = c.n_layers, s.n_heads = c.n_heads, s.n_kv_heads = c.n_kv_heads, s.head_dim = c.head_dim;
  const size_t nq = static_cast<size_t>(c.n_layers) * c.n_heads * (c.head_dim / 2);
  const size_t nk = static_cast<size_t>(c.n_layers) * c.n_kv_heads * (c.head_dim / 2);
  for (size_t i = 0; i < nq; ++i) {
    s.q_mean_real.push_back(0.01f * static_cast<float>(i % 11));
    s.q_mean_imag.push_back(-0.01f * static_cast<float>(i % 7));
    s.q_abs_mean.push_back(1.0f + 0.001f * static_cast<float>(i));
  }
  s.k_mean_real.assign(nk, 0.5f);
  s.k_mean_imag.assign(nk, -0.5f);
  s.k_abs_mean.assign(nk, 1.5f);
  const std::string good = (dir / "good.safetensors").string();
  write_stats_file(good, s, stats_info_for(c, 100, 42));
  const std::string pt = (dir / "good.pt").string();
  const std::string cmd = "python3 " + std::string(TRIATTN_SOURCE_DIR) + "/tests/reference/triattention_make_pt.py " +
                          pt + " --mode good --layers " + std::to_string(c.n_layers) + " --heads " +
                          std::to_string(c.n_heads) + " --head-dim " + std::to_string(c.head_dim) + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const auto& [src, name] : {std::pair{good, std::string("stats.safetensors")}, std::pair{pt, std::string("stats.pt")}}) {
    const std::string orig = slurp(src);
    ASSERT_FALSE(orig.empty()) << src;
    const std::string file = (dir / name).string();
    // safetensors: every byte of the header, 400 points over the values. .pt: every byte of
    // the first 2 KiB (local header, the pickle) and of the last 1 KiB (central directory,
    // end record), 1000 points between (the storages and their headers).
    const bool is_pt = name == "stats.pt";
    const size_t n = orig.size();
    const auto cases = is_pt ? sweep_ranges(orig, {{0, 2048, 0}, {2048, n > 1024 ? n - 1024 : 0, 1000},
                                                   {n > 1024 ? n - 1024 : 0, n, 0}})
                             : sweep(orig, safetensors_header_bytes(orig), 400);
    Tally t;
    for (size_t i = 0; i < cases.size(); i += kSweepStride) {
      write_bytes(file, cases[i].bytes);
      try {
        auto loaded = load_stats(file, *model, nullptr);
        ASSERT_TRUE(loaded);
        for (float v : loaded->q_abs_mean) ASSERT_TRUE(std::isfinite(v)) << cases[i].what << ": a non-finite value got through";
        for (float v : loaded->q_mean_real) ASSERT_TRUE(std::isfinite(v)) << cases[i].what;
        for (float v : loaded->q_mean_imag) ASSERT_TRUE(std::isfinite(v)) << cases[i].what;
        ++t.loaded;
      } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(file), std::string::npos) << cases[i].what << ": the error does not name " << file << ": " << msg;
        ++t.refused;
      }
      if (i % (kCliEvery * 4) == 0) {
        check_cli({"generate", "-m", model_path, "-p", "Once", "-n", "2", "-t", "1", "--kv-policy", "triattention",
                   "--kv-budget", "8", "--divide-length", "4", "--window", "2", "--stats", file},
                  cases[i]);
      }
    }
    report(name, cases_run(cases.size()), t);
    EXPECT_GT(t.refused, 0);
  }
}
