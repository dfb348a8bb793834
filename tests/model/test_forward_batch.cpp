// The forward step batches tokens of independent sequences (each with its own KV cache and
// positions); a batch must give the same logits as running each sequence alone.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/shared_files.h"
#include "common/temp_dir.h"
#include "ops/attention.h"
#include "model/forward.h"
#include "model/kv_shape.h"
#include "model/maker.h"
#include "model/model.h"

namespace triattn {
namespace {

using test::kStoriesDir;

KvCache make_cache(const Model& m) {
  const ModelConfig& c = m.config();
  return KvCache(KvCacheShape{c.n_layers, c.n_kv_heads, c.head_dim, DType::F32});
}

// A cache as a prompt of n tokens leaves it (a sliding layer holds its last window - 1), with
// random keys and values: feeding n tokens through the model would attend n^2 times, which
// takes minutes under qemu, and what the chunked attention must agree on is any cache.
KvCache random_filled_cache(const ModelConfig& c, int64_t n, uint32_t seed) {
  KvCache cache(kv_cache_shape(c, DType::F16));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(c.n_kv_heads) * c.head_dim), v(k.size());
  for (int64_t p = 0; p < n; ++p)
    for (int l = 0; l < c.n_layers; ++l) {
      if (c.is_sliding(l) && p < n - (c.layer(l).window - 1)) continue;
      for (float& x : k) x = normal(rng);
      for (float& x : v) x = normal(rng);
      cache.append(l, static_cast<int32_t>(p), k.data(), v.data());
    }
  cache.advance(n);
  return cache;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

TEST(ForwardBatch, ThreeSequencesMatchRunningAlone) {
  auto model = Model::load(kStoriesDir);
  ThreadPool pool(2);
  Forward fwd(*model, &pool);
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 80, 147, 201, 282, 57, 8}, {1, 300, 12, 99}, {1, 80, 147, 201, 282, 57, 8, 40, 41, 42, 43, 44}};
  const std::vector<int32_t> next = {500, 501, 502};

  // Alone: prefill then one decode step per sequence.
  std::vector<std::vector<float>> alone_prefill, alone_decode;
  for (size_t i = 0; i < prompts.size(); ++i) {
    KvCache cache = make_cache(*model);
    std::vector<std::vector<float>> out;
    ForwardItem item{&cache, prompts[i], ForwardItem::Logits::All};
    fwd.run(std::span<const ForwardItem>(&item, 1), out);
    alone_prefill.push_back(out[0]);
    ForwardItem step{&cache, std::span<const int32_t>(&next[i], 1), ForwardItem::Logits::Last};
    fwd.run(std::span<const ForwardItem>(&step, 1), out);
    alone_decode.push_back(out[0]);
  }

  // Batched: all three prompts in one call, then all three decode steps in one call.
  std::vector<KvCache> caches;
  for (size_t i = 0; i < prompts.size(); ++i) caches.push_back(make_cache(*model));
  std::vector<ForwardItem> batch;
  for (size_t i = 0; i < prompts.size(); ++i) batch.push_back({&caches[i], prompts[i], ForwardItem::Logits::All});
  std::vector<std::vector<float>> out;
  fwd.run(batch, out);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_LT(max_abs_diff(out[i], alone_prefill[i]), 1e-4f) << "seq " << i;

  batch.clear();
  for (size_t i = 0; i < prompts.size(); ++i)
    batch.push_back({&caches[i], std::span<const int32_t>(&next[i], 1), ForwardItem::Logits::Last});
  fwd.run(batch, out);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_LT(max_abs_diff(out[i], alone_decode[i]), 1e-4f) << "seq " << i;
    EXPECT_EQ(caches[i].n_processed(), static_cast<int64_t>(prompts[i].size() + 1));
  }
}

// Prefill in one step, token by token, or in chunks gives the same final logits.
TEST(ForwardBatch, ChunkingDoesNotChangeLogits) {
  auto model = Model::load(kStoriesDir);
  Forward fwd(*model, nullptr);
  std::vector<int32_t> ids = {1, 80, 147, 201, 282, 57, 8, 40, 41, 42, 43};
  std::vector<float> reference;
  for (size_t chunk : {ids.size(), size_t{1}, size_t{4}}) {
    KvCache cache = make_cache(*model);
    std::vector<std::vector<float>> out;
    for (size_t s = 0; s < ids.size(); s += chunk) {
      const size_t n = std::min(chunk, ids.size() - s);
      ForwardItem item{&cache, std::span<const int32_t>(ids).subspan(s, n), ForwardItem::Logits::Last};
      fwd.run(std::span<const ForwardItem>(&item, 1), out);
    }
    if (reference.empty()) reference = out[0];
    else EXPECT_LT(max_abs_diff(out[0], reference), 1e-4f) << "chunk " << chunk;
  }
}

// Decode over a cache longer than one attention chunk: the chunks of each stream are the
// pieces of work (on different threads when there are more threads than KV-head runs) and
// merge after (attention.h); the logits are the same bit for bit on no pool, 3 and 4 threads,
// and as the first token of a two-token step (runs of two tokens take attend(), the chunks in
// turn). Qwen3 (2 KV heads) and gpt-oss (sinks, sliding layers).
TEST(ForwardBatch, AttentionChunksOnManyThreadsMatchOneThread) {
  test::TempDir dir;
  for (const char* preset : {"tiny-qwen3", "tiny-gptoss"}) {
    SCOPED_TRACE(preset);
    ModelConfig cfg = model_preset(preset);
    cfg.context_length = 2 * kChunkKeys;
    const std::string path = dir.file(std::string(preset) + ".gguf");
    write_random_gguf(cfg, MakerOptions{DType::F32, 5}, path);
    auto model = Model::load(path);
    const ModelConfig& c = model->config();
    ASSERT_LT(c.n_kv_heads, 3);
    Forward one(*model, nullptr);
    const KvCache filled = random_filled_cache(c, kChunkKeys + 300, 9);
    std::vector<std::vector<float>> out;
    ASSERT_GT(attention_chunks(filled.max_size()), 1);
    const int32_t next = 77;
    KvCache alone = filled;
    ForwardItem step{&alone, std::span<const int32_t>(&next, 1), ForwardItem::Logits::Last};
    one.run(std::span<const ForwardItem>(&step, 1), out);
    const std::vector<float> want = out[0];
    // The same token first in a two-token step: runs of two tokens take attend() (the chunks
    // in turn on one thread), and the first token's logits are those of the decode step.
    {
      KvCache cache = filled;
      const int32_t two[] = {next, 78};
      ForwardItem s2{&cache, std::span<const int32_t>(two, 2), ForwardItem::Logits::All};
      one.run(std::span<const ForwardItem>(&s2, 1), out);
      ASSERT_EQ(out[0].size(), 2 * want.size());
      for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(out[0][i], want[i]) << "two-token step, logit " << i;
    }
    for (int threads : {3, 4}) {
      ThreadPool pool(threads);
      Forward many(*model, &pool);
      KvCache cache = filled;
      ForwardItem s2{&cache, std::span<const int32_t>(&next, 1), ForwardItem::Logits::Last};
      many.run(std::span<const ForwardItem>(&s2, 1), out);
      ASSERT_EQ(out[0].size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(out[0][i], want[i]) << threads << " threads, logit " << i;
    }
  }
}

TEST(ForwardBatch, RejectsTokensOutsideTheVocabulary) {
  auto model = Model::load(kStoriesDir);
  Forward fwd(*model, nullptr);
  KvCache cache = make_cache(*model);
  std::vector<int32_t> ids = {1, 2048};
  ForwardItem item{&cache, ids, ForwardItem::Logits::Last};
  std::vector<std::vector<float>> out;
  EXPECT_ANY_THROW(fwd.run(std::span<const ForwardItem>(&item, 1), out));
}

}  // namespace
}  // namespace triattn
