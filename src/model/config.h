#pragma once
// Architecture as data: everything the one generic decoder forward needs to know about a
// model, filled from GGUF metadata, config.json or a llama2.c header. No architecture
// switches elsewhere: code branches on these fields, never on the architecture name.
#include <cstdint>
#include <string>
#include <vector>

#include "ops/gated_delta.h"

namespace triattn {

enum class RopeScalingType { None, Linear, Llama3, Yarn };
// FFN gate: SwiGLU, GeGLU (tanh approximation), or gpt-oss's clamped SwiGLU (ModelConfig::swiglu_limit:
// g = min(gate, limit), u = clamp(up, -limit, limit), out = (u + 1) * g * sigmoid(1.702 g)).
enum class Activation { Silu, GeluTanh, SwigluOai };
enum class AttentionKind { Full, Sliding };
enum class FfnKind { Dense, Moe };  // SwiGLU/GeGLU MLP, or a mixture of experts (model/moe.h)
// A layer's token mixer: softmax attention over a KV cache, or a Gated DeltaNet (linear
// attention with a fixed-size recurrent state per sequence and no KV cache).
enum class MixerKind { Attention, DeltaNet };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::None;
  float factor = 1.0f;
  int64_t original_context = 0;   // llama3 / yarn: original max positions
  float low_freq_factor = 1.0f;   // llama3
  float high_freq_factor = 4.0f;  // llama3
  float beta_fast = 32.0f;        // yarn
  float beta_slow = 1.0f;         // yarn
  float attn_factor = 0.0f;       // yarn: mscale override; 0 = derive 0.1*ln(factor)+1
  // yarn: whether the ramp's correction dims are rounded out to whole bands (transformers'
  // `truncate`, default true; gpt-oss's config says false).
  bool truncate = true;
};

// The largest value accepted for each dimension. Far above any real model (the largest have
// ~126 layers, n_embd 16384, n_ff 53248, 128 heads, head_dim 256, 256k tokens, 10M context),
// yet small enough that no product of two overflows 64 bits and that no count read from a
// file header sizes an allocation (a layer table, a vocabulary) before the tensors in the
// file have been checked against it: a corrupted value fails here, by name.
struct ModelLimits {
  static constexpr int64_t n_layers = 4096;
  static constexpr int64_t n_embd = 1 << 20;
  static constexpr int64_t n_ff = 1 << 22;
  static constexpr int64_t n_heads = 1 << 14;
  static constexpr int64_t head_dim = 1 << 14;
  static constexpr int64_t vocab_size = 1 << 24;
  static constexpr int64_t context_length = (int64_t{1} << 31) - 1;  // positions are int32
  static constexpr int64_t n_expert = 1 << 12;  // the largest MoE models have 256-384
};

// A dimension as a file stores it, checked in the file's own width BEFORE it is narrowed to
// int (so 0xffffffff reads as 4294967295, not -1): throws
// "<where>: <key> is <value>; it must be a whole number from 1 to <max>".
int checked_dim(const std::string& where, const std::string& key, int64_t value, int64_t max);

// One layer's entry. Sliding layers attend to the `window` most recent positions (the query's
// own included) and use the sliding RoPE parameters; full layers see every kept key.
struct LayerConfig {
  AttentionKind attention = AttentionKind::Full;
  int window = 0;  // sliding: keys with q_pos - k_pos < window take part
  FfnKind ffn = FfnKind::Dense;
  MixerKind mixer = MixerKind::Attention;
};

// The Gated DeltaNet layers of a hybrid model (Qwen3.5/3.6, Qwen3-Next). One projection gives
// q, k (n_k_heads x head_k_dim each) and v (n_v_heads x head_v_dim), which pass a causal
// depthwise convolution of conv_kernel taps; every value head keeps a head_k_dim x head_v_dim
// state updated by the delta rule with a decay g and a write strength beta per head and token.
// The head layout (and which key head each value head reads: HF checkpoints group value heads
// by key head, llama.cpp's GGUF converter tiles them) is the kernels' own ops::DeltaShape.
struct DeltaNetConfig : ops::DeltaShape {
  int conv_kernel = 0;
  // f32 floats of one sequence's state for one layer: the convolution's last conv_kernel - 1
  // inputs, then the n_v_heads delta-rule matrices (state_floats()).
  int64_t conv_state_floats() const { return static_cast<int64_t>(conv_kernel - 1) * conv_dim(); }
};

struct ModelConfig {
  std::string arch;  // model/arch.h name: "llama", "qwen2", "qwen3", "gemma2", ... (identity for stats files and messages)
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
  // Partial RoPE: only the first rotary_dim coordinates of each head rotate (pairs i and
  // i + rotary_dim/2), with frequencies theta^(-2f/rotary_dim); 0 = all of head_dim.
  int rotary_dim = 0;
  int rotary_dims() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  // Qwen3.5: q_proj emits, per head, head_dim query values then head_dim gate values, and the
  // attention output of each head is multiplied by sigmoid(gate) before o_proj.
  bool attn_output_gate = false;
  bool qkv_bias = false;        // qwen2: biases on q/k/v projections
  bool qk_norm = false;         // qwen3: RMSNorm over each head of q and k before RoPE
  bool tied_embeddings = false; // output projection = token embedding
  // Gemma family (all off for llama/qwen):
  bool post_norms = false;      // RMSNorm of the attention and FFN outputs before each residual add
  bool embed_scale = false;     // embeddings multiplied by sqrt(n_embd)
  Activation activation = Activation::Silu;
  float query_scale = 0;        // attention score scale; 0 = 1/sqrt(head_dim) (Gemma: query_pre_attn_scalar^-1/2)
  float attn_softcap = 0;       // scores -> cap * tanh(scores / cap); 0 = none
  float final_softcap = 0;      // logits -> cap * tanh(logits / cap); 0 = none
  // Sliding-window layers: the window, and their RoPE base and scaling (theta 0 = rope_theta;
  // the global rope_scaling is for full layers only when rope_theta_local is set).
  int sliding_window = 0;
  float rope_theta_local = 0;
  RopeScaling rope_scaling_local;
  // Mixture of experts (Qwen3-MoE), for the layers whose LayerConfig::ffn is Moe: n_expert
  // experts of hidden size n_ff_expert (n_ff is the dense layers' size), a router that takes
  // the softmax over all experts and keeps the n_expert_used best, their weights renormalised
  // to sum to 1 when expert_weights_norm. 0 experts: a dense model.
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_expert = 0;
  bool expert_weights_norm = false;
  // gpt-oss: a bias on the router and on every expert's gate, up and down projections, a
  // bias on the attention output, and per-head sink logits in the attention softmax (each
  // query head's softmax runs over [scores, sink] and drops the sink's column).
  bool moe_bias = false;
  bool attn_out_bias = false;
  bool attn_sinks = false;
  float swiglu_limit = 7.0f;  // Activation::SwigluOai
  // Qwen3.5-MoE: a shared expert of this hidden size beside the routed ones, its output scaled
  // by sigmoid(shared_gate . x); 0 = none.
  int n_ff_shared = 0;
  // Gemma 4: the sliding layers' own head size and KV head count (0 = head_dim / n_kv_heads,
  // which are then the full-attention layers'); on the full layers V is the raw k_proj
  // output (no v_proj; before k_norm and RoPE) when k_eq_v; V passes an RMSNorm without
  // weight (v_norm); each layer's output is multiplied by its scalar (layer_scale).
  int head_dim_swa = 0;
  int n_kv_heads_swa = 0;
  bool k_eq_v = false;
  bool v_norm = false;
  bool layer_scale = false;
  // Hybrid models: the DeltaNet layers' sizes (LayerConfig::mixer).
  DeltaNetConfig delta;
  // One entry per layer (n_layers); empty means every layer full attention, dense FFN.
  std::vector<LayerConfig> layers;
  // Per-band divisors of ω_f stored by some GGUFs (llama.cpp's rope_freqs.weight, used for
  // Llama 3.1 scaling); empty = none.
  std::vector<float> rope_freq_factors;

  // Angular frequency of each rotated band f = 0..rotary_dims()/2-1, after rope scaling, for the
  // full-attention layers (the ones KV compression acts on) ...
  std::vector<float> rope_freqs() const;
  // ... and for layer l (sliding layers use the local base and scaling where set).
  std::vector<float> rope_freqs(int layer) const;
  LayerConfig layer(int l) const { return layers.empty() ? LayerConfig{} : layers[static_cast<size_t>(l)]; }
  bool is_sliding(int l) const { return layer(l).attention == AttentionKind::Sliding; }
  // Layer l's head size, KV heads and rotated coordinates (LayerConfig's where it has its own),
  // and the largest of each over the attention layers (scratch sizes).
  int layer_head_dim(int l) const { return is_sliding(l) && head_dim_swa > 0 ? head_dim_swa : head_dim; }
  int layer_kv_heads(int l) const { return is_sliding(l) && n_kv_heads_swa > 0 ? n_kv_heads_swa : n_kv_heads; }
  int layer_rotary_dims(int l) const { return is_sliding(l) && head_dim_swa > 0 ? head_dim_swa : rotary_dims(); }
  int max_head_dim() const;
  int max_kv_heads() const;
  // Whether the sliding layers' head size or KV head count differs from the full layers'.
  bool layer_shape_differs() const;
  // Whether layer l takes V from its K projection (Gemma 4's full layers with k_eq_v).
  bool v_from_k(int l) const { return k_eq_v && !is_sliding(l) && !is_delta(l); }
  bool has_sliding_layers() const;
  bool is_moe(int l) const { return layer(l).ffn == FfnKind::Moe; }
  bool has_moe_layers() const;
  bool is_delta(int l) const { return layer(l).mixer == MixerKind::DeltaNet; }
  bool has_delta_layers() const;
  // Whether some layer is not full attention (sliding window or DeltaNet): then only
  // full_attention_layers() are compressed and calibrated.
  bool has_uncompressed_layers() const { return has_sliding_layers() || has_delta_layers(); }
  // Sets every layer's FFN kind as transformers' Qwen3-MoE does: a mixture of experts when
  // n_expert > 0, the layer is not in `dense_layers` (config.json mlp_only_layers) and
  // (l + 1) % sparse_step == 0 (decoder_sparse_step); dense otherwise. Sizes `layers`.
  void set_ffn_kinds(int sparse_step, const std::vector<int>& dense_layers);
  // Layers with full attention (all of them for llama/qwen; not sliding, not DeltaNet).
  std::vector<int> full_attention_layers() const;
  // YaRN attention factor (mscale); 1 for other scalings. Enters scores as its square (fs²).
  float rope_attn_factor() const;
  // Throws Error naming the first inconsistent or out-of-range field (ModelLimits), prefixed
  // with `where` (a loader passes its file).
  void validate(const std::string& where = "model config") const;
  std::string describe() const;  // one line for logs
};

}  // namespace triattn
