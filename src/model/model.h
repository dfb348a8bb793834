#pragma once
// A loaded model: config, weights (views into mmapped files or owned buffers, layouts fixed
// at load time to the runtime's canonical form) and tokenizer. Immutable and shared by any
// number of sequences; callers own KV caches and scratch.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/large_buffer.h"
#include "core/tensor.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"

namespace triattn {

class MappedFile;

struct LayerWeights {
  TensorView attn_norm;             // f32 [n_embd]
  TensorView wq, wk, wv, wo;        // [n_heads*hd, n_embd], [n_kv*hd, n_embd] x2, [n_embd, n_heads*hd]
  TensorView bq, bk, bv;            // f32, empty unless cfg.qkv_bias
  TensorView q_norm, k_norm;        // f32 [head_dim], empty unless cfg.qk_norm
  TensorView post_attn_norm;        // f32 [n_embd], empty unless cfg.post_norms
  TensorView ffn_norm;              // f32 [n_embd]
  TensorView w_gate, w_up, w_down;  // [n_ff, n_embd] x2, [n_embd, n_ff]; empty in MoE layers
  // MoE layers only: router [n_expert, n_embd] and experts [n_expert, n_ff_expert, n_embd] x2,
  // [n_expert, n_embd, n_ff_expert] (model/moe.h: expert_matrix views one expert's matrix).
  TensorView router, gate_exps, up_exps, down_exps;
  TensorView post_ffn_norm;         // f32 [n_embd], empty unless cfg.post_norms
  // gpt-oss: f32 attention output bias [n_embd] (cfg.attn_out_bias), sink logits [n_heads]
  // (cfg.attn_sinks), router bias [n_expert] and expert biases [n_expert, n_ff_expert] x2,
  // [n_expert, n_embd] (cfg.moe_bias); empty otherwise.
  TensorView bo, sinks, router_bias, gate_exps_bias, up_exps_bias, down_exps_bias;
  // Gated DeltaNet layers (cfg.delta; the attention tensors above are then empty): in_proj_qkv
  // [conv_dim, n_embd], in_proj_z [value_dim, n_embd], in_proj_b and in_proj_a [n_v_heads,
  // n_embd], f32 conv [conv_dim, conv_kernel], dt_bias and A = -exp(A_log) [n_v_heads], the
  // gated norm [head_v_dim], out_proj [n_embd, value_dim].
  TensorView dn_qkv, dn_z, dn_beta, dn_alpha, dn_conv, dn_dt_bias, dn_a, dn_norm, dn_out;
  // A MoE layer's shared expert (cfg.n_ff_shared): f32 gate weights [n_embd] for its sigmoid
  // scale, and its SwiGLU [n_ff_shared, n_embd] x2, [n_embd, n_ff_shared].
  TensorView shared_gate_inp, shared_gate, shared_up, shared_down;
  TensorView layer_scale;  // f32 [1], empty unless cfg.layer_scale (Gemma 4)

  // The matrices a token is multiplied by, apart from the routed experts (repacking, byte
  // and FLOP counts walk these lists), and the routed expert stacks.
  std::vector<const TensorView*> matrices() const;
  std::vector<TensorView*> matrices();
  std::vector<const TensorView*> expert_stacks() const;
  std::vector<TensorView*> expert_stacks();
  // Every tensor of the layer.
  std::vector<const TensorView*> tensors() const;
};

struct ModelWeights {
  TensorView tok_embd;     // [vocab, n_embd]
  TensorView output_norm;  // f32 [n_embd]
  TensorView output;       // [vocab, n_embd] (== tok_embd when tied)
  std::vector<LayerWeights> layers;
};

struct LoadOptions {
  // Move the matmul weights into huge pages, rewritten into the faster internal layouts
  // where there is one (model/weight_repack.h). Off keeps the file's mapping and layout (the
  // CLI's TRIATTN_REPACK=0, for comparing against it).
  bool repack = true;
  // Threads for the work done at load time (copying, repacking); 0 = all cores. Commands pass their -t.
  int threads = 0;
  // Called with the checked weights, in the file's layout, just before repacking: where the
  // kernels (and with them the layouts repacking writes) are chosen by timing them on these
  // matrices (cli/kernel_choice.h).
  std::function<void(const ModelWeights&)> before_repack = nullptr;
};

class ModelBuilder;

class Model {
 public:
  // MODEL is a .gguf file, an HF directory (config.json + safetensors + tokenizer.json) or a
  // llama2.c .bin (tokenizer tokNNN.bin beside it). Throws Error naming the problem.
  static std::shared_ptr<const Model> load(const std::string& path, const LoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::string& path() const { return path_; }
  // Layer matrix dtypes as in the file (repacked layouts by their file type), most bytes
  // first: "q8_0", "q4_k+q6_k".
  std::string weight_type_name() const;
  size_t weight_bytes() const;           // bytes of all weight tensors (every expert)
  size_t expert_weight_bytes() const;    // of those, the MoE layers' experts (0 for a dense model)
  // Bytes one token of one sequence reads: all of them but, in MoE layers, only
  // n_expert_used of the n_expert experts (the active parameters).
  size_t active_weight_bytes() const;
  // What the loader noticed but did not refuse (unused tensors, ...); frontends print them.
  const std::vector<std::string>& warnings() const { return warnings_; }
  size_t owned_bytes() const;  // bytes of the buffers the loader made (copies, repacked matrices)

 private:
  friend class ModelBuilder;  // the one way a Model is made (model/model_builder.h)
  Model() = default;

  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::string path_;
  std::vector<std::string> warnings_;
  std::vector<std::shared_ptr<void>> keep_alive_;        // mmaps / files the views point into
  std::vector<const MappedFile*> mapped_files_;          // those of keep_alive_ that are mmaps
  std::vector<LargeBuffer> owned_;                       // tensors rewritten at load time
};

}  // namespace triattn
