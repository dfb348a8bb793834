// Greedy outputs, KV peaks, pruning events and final keep sets of the three small models
// under full attention and three evicting policies (one scored, two observing), pinned: a
// restructuring of the engine, the forward pass or the policies must leave every one of them
// bit for bit as it was. The token hashes were taken from `triattn generate --json` before
// the engine step became the one driver of the forward pass.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/thread_pool.h"
#include "engine_test_util.h"

namespace triattn {
namespace {

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}
constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;

struct Pinned {
  const char* policy;
  uint64_t tokens_hash;  // FNV-1a 64 of the 120 generated ids (int32, little-endian)
  int64_t kv_peak_tokens, prune_events;
  size_t kv_peak_bytes;
  uint64_t keep_hash;  // FNV-1a 64 of every stream's kept positions at the end, stream order
};

void check_model(const std::string& path, const std::vector<Pinned>& pins) {
  const auto model = Model::load(path);
  ThreadPool pool(2);
  const auto stats = test::calibrated_stats(*model);
  const Tokenizer& tok = model->tokenizer();
  const std::vector<int32_t> prompt =
      tok.encode("Once upon a time, there was a little girl named Lily. She loved to play outside", tok.add_bos_default());
  for (const Pinned& pin : pins) {
    SCOPED_TRACE(path + " " + pin.policy);
    KvSettings kv;
    kv.policy = pin.policy;
    if (kv.policy != "full") {
      const bool snap = kv.policy == "snapkv";
      kv.params.budget = snap ? 24 : 32;
      kv.params.divide_length = 8;
      kv.params.window = snap ? 4 : 8;
      kv.params.stats = stats;
    }
    if (kv.policy != "triattention") kv.params.stats = nullptr;
    const PolicyFactory policies(*model, kv);
    Sequence seq(*model, policies);
    Forward forward(*model, &pool);
    SamplerParams sp;
    sp.temperature = 0;
    Sampler sampler(sp);
    GenerateOptions opt;
    opt.n_predict = 120;
    opt.stop_at_eog = false;
    const GenerateResult r = generate(*model, forward, seq, prompt, opt, sampler);
    ASSERT_EQ(r.tokens.size(), 120u);
    uint64_t keep = kFnvBasis;
    const KvCache& cache = seq.cache();
    for (int l = 0; l < cache.shape().n_layers; ++l)
      for (int h = 0; h < cache.shape().n_kv_heads; ++h)
        keep = fnv1a(keep, cache.positions(l, h), sizeof(int32_t) * static_cast<size_t>(cache.size(l, h)));
    char got[40];
    std::snprintf(got, sizeof got, "0x%016llx", static_cast<unsigned long long>(keep));
    EXPECT_EQ(fnv1a(kFnvBasis, r.tokens.data(), sizeof(int32_t) * r.tokens.size()), pin.tokens_hash);
    EXPECT_EQ(r.stats.kv_peak_tokens, pin.kv_peak_tokens);
    EXPECT_EQ(r.stats.prune_events, pin.prune_events);
    EXPECT_EQ(r.stats.kv_peak_bytes, pin.kv_peak_bytes);
    EXPECT_EQ(keep, pin.keep_hash) << "keep sets hash to " << got;
  }
}

const std::string kShared = TRIATTN_SHARED_DIR;

TEST(GreedyPinned, TinyStories656k) {
  check_model(kShared + "/models/tinystories-656k",
              {{"full", 0x8ea4108154cf7548ULL, 131, 0, 67072, 0xfeab97c9c4020165ULL},
               {"triattention", 0xab7c3412dff89281ULL, 40, 12, 20480, 0xc8282e6742f73445ULL},
               {"h2o", 0x1fb8312c5cf9b3dbULL, 40, 12, 20480, 0x8e25355f26e4551bULL},
               {"snapkv", 0xbf658b355b5e6662ULL, 32, 13, 16384, 0x211916001468f8d0ULL}});
}

TEST(GreedyPinned, Stories260k) {
  check_model(kShared + "/models/stories260k/stories260K.bin",
              {{"full", 0xaf3b07f9ba314ec8ULL, 145, 0, 92800, 0x5dc4fae71ba93ca5ULL},
               {"triattention", 0xdec73d93fa307967ULL, 40, 14, 25600, 0x61e9fdb2e55ce45cULL},
               {"h2o", 0x640d01dfdcb93258ULL, 40, 14, 25600, 0x6779e4a514bcef8bULL},
               {"snapkv", 0x3ad4e8adb301c73eULL, 32, 15, 20480, 0xab3a8e8dc19f05c6ULL}});
}

TEST(GreedyPinned, ByteLm2k) {
  check_model(kShared + "/models/bytelm-2k/bytelm-2k-f32.gguf",
              {{"full", 0x044ed2b32c0e7b3eULL, 199, 0, 407552, 0x31f417d5d21b2065ULL},
               {"triattention", 0x81764d0b70ca370eULL, 40, 20, 81920, 0xb3dbbeac8c86bd25ULL},
               {"h2o", 0x6039d495a15f23c2ULL, 40, 20, 81920, 0x52c6ee894bce7202ULL},
               {"snapkv", 0x40175b70910bfa2fULL, 32, 21, 65536, 0x558a58cea7a3cdc1ULL}});
}

}  // namespace
}  // namespace triattn
