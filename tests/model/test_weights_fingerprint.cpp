// The weights fingerprint: equal (up to quantization noise) for the same weights in GGUF and
// HF form, unrelated for other weights of the same shape, and the similarity measure itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/shared_files.h"
#include "common/temp_dir.h"
#include "model/maker.h"
#include "model/model.h"
#include "model/weights_fingerprint.h"

namespace triattn {
namespace {


// Shared data is part of the test: missing data fails, it is never a skip.
std::string shared(const std::string& rel) {
  const std::string p = test::shared_path(rel);
  EXPECT_TRUE(std::filesystem::exists(p)) << p << " is missing: the test needs ../shared";
  return p;
}

double similarity(const Model& a, const Model& b) {
  return fingerprint_similarity(weights_fingerprint(a), weights_fingerprint(b));
}

TEST(WeightsFingerprint, SimilarityIsACentredCosine) {
  const std::vector<float> a = {1, 2, 3, 4}, b = {11, 12, 13, 14}, c = {4, 3, 2, 1}, k = {5, 5, 5, 5};
  EXPECT_DOUBLE_EQ(fingerprint_similarity(a, a), 1.0);
  EXPECT_NEAR(fingerprint_similarity(a, b), 1.0, 1e-12);  // a common offset does not matter
  EXPECT_NEAR(fingerprint_similarity(a, c), -1.0, 1e-12);
  EXPECT_EQ(fingerprint_similarity(a, k), 0.0);  // constant: no information
  EXPECT_EQ(fingerprint_similarity(a, std::vector<float>{1, 2, 3}), 0.0);
  EXPECT_EQ(fingerprint_similarity({}, {}), 0.0);
}

TEST(WeightsFingerprint, RealModelGgufQ8AndHfF32Match) {
  const auto gguf = Model::load(shared("models/tinystories-656k/TinyStories-656K-Q8_0.gguf"));
  const auto hf = Model::load(shared("models/tinystories-656k"));
  const auto fp = weights_fingerprint(*gguf);
  ASSERT_EQ(fp.size(), static_cast<size_t>(kWeightsFingerprintSize));
  EXPECT_EQ(fp, weights_fingerprint(*gguf));  // deterministic
  const double same = similarity(*gguf, *hf);
  std::printf("tinystories-656k Q8_0 GGUF vs F32 HF: similarity %.6f\n", same);
  EXPECT_GE(same, kSameWeightsSimilarity);
  EXPECT_GE(same, 0.9999);  // Q8_0 noise is ~0.4% of a block's largest value

  const auto stories = Model::load(shared("models/stories260k/stories260K.bin"));
  const double other = similarity(*stories, *gguf);
  std::printf("stories260k vs tinystories-656k: similarity %.6f\n", other);
  EXPECT_LT(other, 0.5);
}

TEST(WeightsFingerprint, RandomModelsSameSeedMatchAcrossFormatsOtherSeedDoesNot) {
  test::TempDir dir;
  const ModelConfig cfg = model_preset("tiny-llama");
  for (uint64_t seed : {1, 2}) {
    write_random_gguf(cfg, {DType::Q8_0, seed}, dir.file("s" + std::to_string(seed) + ".gguf"));
    write_random_hf(cfg, {DType::F32, seed}, dir.file("s" + std::to_string(seed) + "-hf"));
  }
  write_random_gguf(cfg, {DType::Q4_0, 1}, dir.file("s1-q4.gguf"));
  const auto g1 = Model::load(dir.file("s1.gguf")), h1 = Model::load(dir.file("s1-hf"));
  const auto g2 = Model::load(dir.file("s2.gguf")), h2 = Model::load(dir.file("s2-hf"));
  const auto q4 = Model::load(dir.file("s1-q4.gguf"));
  const double same1 = similarity(*g1, *h1), same2 = similarity(*g2, *h2), q4_f32 = similarity(*q4, *h1);
  const double other_hf = similarity(*h1, *h2), other_gguf = similarity(*g1, *g2), other_mixed = similarity(*g1, *h2);
  std::printf("seed 1 GGUF Q8_0 vs HF F32 %.6f, seed 2 %.6f, seed 1 Q4_0 vs F32 %.6f\n", same1, same2, q4_f32);
  std::printf("seed 1 vs seed 2: HF %.4f, GGUF %.4f, GGUF 1 vs HF 2 %.4f\n", other_hf, other_gguf, other_mixed);
  EXPECT_GE(same1, 0.9999);
  EXPECT_GE(same2, 0.9999);
  EXPECT_GE(q4_f32, kSameWeightsSimilarity);
  for (double o : {other_hf, other_gguf, other_mixed}) EXPECT_LT(std::abs(o), 0.3);  // ~N(0, 1/16) for 256 values
}

}  // namespace
}  // namespace triattn
