#pragma once
// llama2.c checkpoints (Karpathy's export.py) and the tokenizer `tokNNN.bin`:
// - version 0, legacy: 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
//   seq_len; a negative vocab_size means a separate classifier), then fp32 weights kind by
//   kind (all layers' rms_att, then all wq, ...), two unused freq_cis tables, [wcls].
// - versions 1 and 2: a 256-byte header (uint32 magic "ak42", int32 version, the same 7
//   int32, uint8 shared_classifier, and for version 2 int32 group_size, zero padding), then
//   the norms in fp32 (rms_att, rms_ffn, rms_final), then tok_embeddings, wq, wk, wv, wo,
//   w1, w2, w3, [wcls]: fp32 in version 1; in version 2 ("runq", *_q80.bin) each tensor is
//   int8 values followed by one fp32 scale per group_size consecutive values of the
//   flattened tensor (value = q * scale; groups may run across rows).
// Tensors are used in place from the mapping; the caller fixes the RoPE layout (interleaved
// pairs) and turns version 2 tensors into something the kernels read (Llama2cTensor::dequantize).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace triattn {

struct Llama2cHeader {
  int32_t version = 0;  // 0 legacy, 1 fp32, 2 int8 groups
  int32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0, seq_len = 0;
  bool shared_classifier = false;
  int32_t group_size = 0;  // version 2 only
};

// One tensor in place in the mapping: fp32, or (version 2 matrices) int8 with group scales.
struct Llama2cTensor {
  std::vector<int64_t> shape;       // [out, in] or [n]
  const uint8_t* data = nullptr;    // fp32 values, or int8 values when quantized
  const uint8_t* scales = nullptr;  // fp32 per group when quantized (not 4-byte aligned in general)
  int64_t group_size = 0;

  bool quantized() const { return scales != nullptr; }
  int64_t numel() const;
  size_t nbytes() const;         // bytes the tensor takes in the file (values and scales)
  TensorView f32_view() const;   // the fp32 values in place; throws for a quantized tensor
  void dequantize(float* out) const;  // numel() fp32 values (q * scale for quantized tensors)
};

struct Llama2cLayer {
  Llama2cTensor rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3;  // matrices [out, in]
};

class Llama2cCheckpoint {
 public:
  // Throws Error naming the file and the problem: bad header, unsupported version, a size
  // that does not match what the header implies.
  static std::shared_ptr<Llama2cCheckpoint> open(const std::string& path);
  const Llama2cHeader& header() const { return header_; }
  const MappedFile& file() const { return file_; }  // the tensors point into it
  Llama2cTensor tok_embeddings, rms_final, wcls;    // wcls == tok_embeddings when shared
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
