#pragma once
// A small fingerprint of a model's weights, the same for every file format of the same
// weights: it lets a stats file (calib/stats_file.h) say which model it was calibrated on
// beyond the shape, which two different models of one architecture share.
//
// It is kWeightsFingerprintSize values of the token embedding, dequantized to f32, at fixed
// positions spread over the whole matrix (rows evenly strided over the vocabulary, columns
// scattered). Positions depend only on the embedding's shape, and the token embedding is
// stored unpermuted in every format (GGUF permutes only q/k rows), so a GGUF and an HF copy
// of the same weights read the same numbers up to quantization noise. Compare fingerprints
// with fingerprint_similarity, never exactly.
#include <span>
#include <vector>

namespace triattn {

class Model;

inline constexpr int kWeightsFingerprintSize = 256;

// Similarity at or above which two fingerprints are taken for the same weights. Measured
// (tests/model/test_weights_fingerprint.cpp asserts the bounds): tinystories-656k Q8_0 GGUF
// vs its F32 safetensors 0.99999; tiny-llama random models, GGUF Q8_0 vs HF F32 of one seed
// 0.99999, Q4_0 vs F32 0.997; seed 1 vs seed 2 0.05; stories260k vs tinystories-656k 0.13.
// So 0.99 passes 4-bit quantization and is far above what other weights reach.
inline constexpr double kSameWeightsSimilarity = 0.99;

// kWeightsFingerprintSize values (fewer never: rows and columns repeat on tiny embeddings).
std::vector<float> weights_fingerprint(const Model& model);

// Pearson correlation (cosine similarity of the centred vectors) in [-1, 1]. Centring keeps
// a common offset of all embedding values from making unrelated models look alike. 0 when
// the sizes differ or either vector is empty or constant.
double fingerprint_similarity(std::span<const float> a, std::span<const float> b);

}  // namespace triattn
