#pragma once
// llama2.c checkpoints: legacy fp32 `.bin` (7 int32 header, then fp32 weights in a fixed
// order; a negative vocab_size means a separate classifier) and the tokenizer `tokNNN.bin`.
// Weights are views into the mapping; the caller fixes RoPE layout (interleaved pairs).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace triattn {

struct Llama2cHeader {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
  bool shared_classifier;
};

struct Llama2cLayer {
  TensorView rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3;  // shapes [out, in]
};

class Llama2cCheckpoint {
 public:
  static std::shared_ptr<Llama2cCheckpoint> open(const std::string& path);
  const Llama2cHeader& header() const { return header_; }
  const MappedFile& file() const { return file_; }  // the views point into it
  TensorView tok_embeddings, rms_final, wcls;  // wcls == tok_embeddings when shared
  std::vector<Llama2cLayer> layers;

 private:
  Llama2cCheckpoint() = default;
  MappedFile file_;
  Llama2cHeader header_{};
};

struct Llama2cVocab {
  int32_t max_token_length = 0;
  std::vector<std::string> pieces;
  std::vector<float> scores;
  static Llama2cVocab open(const std::string& path);  // throws Error on malformed input
};

}  // namespace triattn
