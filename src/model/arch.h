#pragma once
// Architectures as data (docs/design.md, Architectures as data): one table entry per
// architecture with its names in GGUF (general.architecture) and in config.json (model_type),
// its traits, and the names of its tensors in both formats. The loaders, the model maker and
// `info` read names and traits from here; the forward pass reads only ModelConfig. Adding an
// architecture is one entry in arch.cpp plus, where its block differs, code in the forward
// pass.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"

namespace triattn {

// Every tensor the runtime knows, by role. Per-layer roles follow the block's order.
enum class TensorRole {
  TokEmbd, OutputNorm, Output,                    // model-wide
  AttnNorm, Wq, Wk, Wv, Bq, Bk, Bv, QNorm, KNorm, Wo,
  PostAttnNorm,                                   // Gemma: norm of the attention output
  FfnNorm, Gate, Up, Down,
  Router, GateExps, UpExps, DownExps,             // mixture of experts (Qwen3-MoE)
  PostFfnNorm,                                    // Gemma: norm of the FFN output
  Bo, Sinks,                                      // gpt-oss: attention output bias, per-head sink logits
  RouterBias, GateExpsBias, UpExpsBias, DownExpsBias,  // gpt-oss: [n_expert] and [n_expert, n] biases
  // Gated DeltaNet layers (Qwen3.5): in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, the
  // depthwise conv [conv_dim, kernel], dt_bias, A (-exp(A_log), as GGUF stores it), the
  // gated norm [head_v_dim] and out_proj.
  DnQkv, DnZ, DnBeta, DnAlpha, DnConv, DnDtBias, DnA, DnNorm, DnOut,
  // Qwen3.5-MoE's shared expert: its gate logit weights [n_embd] and its SwiGLU matrices.
  SharedGateInp, SharedGate, SharedUp, SharedDown,
  LayerScale,  // Gemma 4: the scalar [1] each layer's output is multiplied by
};

// When an architecture's tensor is present.
enum class TensorNeed {
  Always,
  IfQkvBias,  // cfg.qkv_bias
  IfQkNorm,   // cfg.qk_norm
  IfUntied,   // !cfg.tied_embeddings (the output matrix)
  IfDenseFfn, // the layer's FFN is dense (LayerConfig::ffn)
  IfMoeFfn,   // the layer's FFN is a mixture of experts
  IfMoeBias,  // a MoE layer of a model with router and expert biases (cfg.moe_bias)
  IfOutBias,  // cfg.attn_out_bias
  IfSinks,    // cfg.attn_sinks
  IfAttention,    // the layer is softmax attention (not a DeltaNet layer)
  IfDeltaNet,     // the layer is a Gated DeltaNet layer
  IfSharedExpert, // a MoE layer of a model with a shared expert (cfg.n_ff_shared > 0)
  IfOwnV,         // an attention layer with a V projection (not ModelConfig::v_from_k)
  IfLayerScale,   // cfg.layer_scale
};

struct ArchTensor {
  TensorRole role;
  // "{}" stands for the layer index: "blk.{}.attn_q.weight", "model.layers.{}.self_attn.q_proj.weight".
  // Expert roles (role_is_expert): GGUF holds one 3-D tensor [n_expert, rows, cols] per layer,
  // HF one 2-D tensor per expert, whose index is the name's second "{}".
  const char* gguf;
  const char* hf;
  TensorNeed need = TensorNeed::Always;
};

// What a file does not say but the architecture implies. Everything a loader knows about an
// architecture beyond its names is here; per-model values (sizes, windows, thetas) come from
// the file and land in ModelConfig.
struct ArchTraits {
  bool gguf_interleaved_rope = false;  // the GGUF converter permuted q/k rows (llama)
  bool qkv_bias = false;               // q/k/v biases always (qwen2); else config.json attention_bias
  bool qk_norm = false;                // per-head RMSNorm of q and k before RoPE
  bool post_norms = false;             // Gemma: norms after attention and after the FFN
  bool embed_scale = false;            // Gemma: embeddings multiplied by sqrt(n_embd)
  bool hf_norm_plus_one = false;       // Gemma: HF norm weights w act as (1 + w); GGUF stores 1 + w
  Activation activation = Activation::Silu;
  // Layer attention pattern when the file gives none: every `sliding_period`-th layer, at
  // index `full_index` within the period, is full attention, the others sliding.
  // 0 = every layer full.
  int sliding_period = 0;
  int full_index = 0;
  float default_rope_theta_local = 0;  // sliding layers' RoPE base when the file has none; 0 = global
  bool default_tied = false;           // tie_word_embeddings default in config.json
  // Whether the top-k expert weights are renormalised when a GGUF has no
  // <arch>.expert_weights_norm key (llama.cpp's graph fixes it per architecture; config.json
  // says it in norm_topk_prob, whose transformers default is false).
  bool gguf_expert_weights_norm = false;
  // gpt-oss: biases on o, the router and the experts; attention sinks; sliding window always
  // (the window comes from the file); the YaRN ramp's truncate default.
  bool moe_bias = false;
  bool attn_out_bias = false;
  bool attn_sinks = false;
  bool yarn_truncate = true;
  // The HF checkpoint fuses each layer's experts into gate_up_proj [n_expert, n_embd, 2 n_ff]
  // (gate and up interleaved on the last axis) and down_proj [n_expert, n_ff, n_embd], input
  // major, or into MXFP4 *_blocks/*_scales (model/loader_hf_experts.h).
  bool hf_fused_experts = false;
  // Qwen3.5: q_proj also gives each head's output gate (ModelConfig::attn_output_gate); RoPE
  // rotates rotary_fraction of head_dim when the file does not say; without layer_types, every
  // full_attention_interval-th layer is attention and the others Gated DeltaNet.
  bool attn_output_gate = false;
  float rotary_fraction = 1.0f;
  int full_attention_interval = 0;
  // Qwen3.5 as released is a multimodal checkpoint: config.json holds the text model's sizes
  // in "text_config" and its tensors are named "model.language_model.…" (hf_checkpoint_name).
  bool hf_text_config = false;
  // Gemma 4: attention scores unscaled (q/k norms instead: query_scale 1), the weightless V
  // norm, a scalar per layer, and the last layer always full attention.
  float query_scale = 0;
  // Sliding and full layers have their own attention shapes and RoPE: config.json's
  // global_head_dim, attention_k_eq_v and rope_parameters per layer type, GGUF's *_swa keys,
  // per-layer head_count_kv and sliding_window_pattern (the loaders' read_*_gemma4).
  bool per_type_attention = false;
  bool v_norm = false;
  bool layer_scale = false;
  bool last_layer_full = false;
};

struct ArchInfo {
  std::string_view name;                       // ModelConfig::arch, GGUF general.architecture
  std::vector<std::string_view> hf_types;      // config.json model_type values (first: written)
  std::string_view hf_class;                   // config.json "architectures" written by make-model
  ArchTraits traits;
  std::vector<ArchTensor> tensors;             // model-wide then per-layer, in file order
};

// All architectures, in the order messages list them.
std::span<const ArchInfo> architectures();
// By ModelConfig::arch / GGUF name, or by config.json model_type; nullptr when unknown.
const ArchInfo* find_arch(std::string_view name);
const ArchInfo* find_arch_hf(std::string_view model_type);
// By ModelConfig::arch; throws Error naming the supported ones.
const ArchInfo& arch_info(std::string_view name);
// "llama, qwen2, ..." (GGUF names) or the config.json model types.
std::string arch_names();
std::string arch_hf_names();

enum class TensorFormat { Gguf, Hf };
// A tensor's name in a format with "{}" replaced by the layer (and, for an HF expert tensor,
// the second "{}" by the expert).
std::string tensor_name(const ArchTensor& t, TensorFormat f, int layer = -1, int expert = -1);
bool role_is_per_layer(TensorRole r);
bool role_is_expert(TensorRole r);   // GateExps, UpExps, DownExps: 3-D, one matrix per expert
bool role_is_expert_bias(TensorRole r);  // GateExpsBias, UpExpsBias, DownExpsBias: [n_expert, n]
bool role_is_vector(TensorRole r);   // norms, biases and sinks (f32 at run time; expert biases 2-D)
bool role_is_norm(TensorRole r);  // RMSNorm weights (HF's 1 + w where hf_norm_plus_one); not DnNorm
// Whether the model `c` has tensor `t` (in layer `layer`, for per-layer tensors).
bool tensor_needed(const ArchTensor& t, const ModelConfig& c, int layer = -1);
// Shape of a role's tensor in HF layout ([out, in] for matrices, [n] for vectors; experts
// [n_expert, out, in], each HF expert tensor being one [out, in] slice), in layer `layer`
// (whose head size and KV heads may be its own) or, with -1, the full layers'.
std::vector<int64_t> role_shape(TensorRole r, const ModelConfig& c, int layer = -1);

// The name of an HF tensor in a checkpoint of architecture `a` as released: the table's
// "model.…" names become "model.language_model.…" for hf_text_config architectures.
std::string hf_checkpoint_name(const ArchInfo& a, const std::string& name);

// Fills c's traits-derived fields (qk_norm, post_norms, activation, ...) from the entry and
// the per-layer table from the traits' pattern and c.sliding_window (when layer_types was not
// given). Loaders call it after reading sizes.
void apply_arch_traits(const ArchInfo& a, ModelConfig& c);

}  // namespace triattn
