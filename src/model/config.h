#pragma once
// Architecture as data: everything the one generic decoder forward needs to know about a
// model, filled from GGUF metadata, config.json or a llama2.c header. No architecture
// switches elsewhere: code branches on these fields, never on the architecture name.
#include <cstdint>
#include <string>
#include <vector>

namespace triattn {

enum class RopeScalingType { None, Linear, Llama3, Yarn };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::None;
  float factor = 1.0f;
  int64_t original_context = 0;   // llama3 / yarn: original max positions
  float low_freq_factor = 1.0f;   // llama3
  float high_freq_factor = 4.0f;  // llama3
  float beta_fast = 32.0f;        // yarn
  float beta_slow = 1.0f;         // yarn
  float attn_factor = 0.0f;       // yarn: mscale override; 0 = derive 0.1*ln(factor)+1
};

struct ModelConfig {
  std::string arch;  // "llama", "qwen2", "qwen3" (identity for stats files and messages)
  std::string name;  // general.name or directory name
  int n_layers = 0;
  int n_embd = 0;
  int n_ff = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int vocab_size = 0;
  int64_t context_length = 0;
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  bool qkv_bias = false;        // qwen2: biases on q/k/v projections
  bool qk_norm = false;         // qwen3: RMSNorm over each head of q and k before RoPE
  bool tied_embeddings = false; // output projection = token embedding
  // Per-band divisors of ω_f stored by some GGUFs (llama.cpp's rope_freqs.weight, used for
  // Llama 3.1 scaling); empty = none.
  std::vector<float> rope_freq_factors;

  // Angular frequency of each RoPE band f = 0..head_dim/2-1, after rope scaling.
  std::vector<float> rope_freqs() const;
  // YaRN attention factor (mscale); 1 for other scalings. Enters scores as its square (fs²).
  float rope_attn_factor() const;
  // Throws Error naming the first inconsistent field.
  void validate() const;
  std::string describe() const;  // one line for logs
};

}  // namespace triattn
