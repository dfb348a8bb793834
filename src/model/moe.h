#pragma once
// The mixture-of-experts FFN of a MoE layer (ModelConfig::n_expert, LayerConfig::ffn == Moe),
// as Qwen3-MoE defines it: router logits = W_router x; p = softmax over all experts; the
// n_expert_used largest p (renormalised to sum to 1 when expert_weights_norm) weight the
// outputs down_e(act(gate_e x) * up_e x) of the experts they name. gpt-oss (cfg.moe_bias)
// adds a bias to the router logits and to each expert's gate, up and down outputs; its
// softmax over the top-k logits is the renormalised case. Qwen3.5-MoE adds a shared expert
// that every token goes through, scaled by a sigmoid gate of its own.
//
// Tokens are grouped by expert: each selected expert runs one matrix product over all the
// tokens routed to it (prefill is matrix-matrix per expert), and only the selected experts'
// weights are read (decode streams n_expert_used of n_expert experts).
#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "model/config.h"
#include "model/model.h"

namespace triattn {

// Expert e's matrix of a stack [n_expert, rows, cols]: a 2-D view of its bytes. Valid for
// every weight type, the load-time interleaved layouts included (model/weight_repack.h
// interleaves a stack only when every expert's rows are whole groups).
TensorView expert_matrix(const TensorView& experts, int64_t e);

// One token's routing: the chosen experts (best first; equal probabilities: the lower index
// first) and their weights.
struct Route {
  std::vector<int32_t> experts;
  std::vector<float> weights;
};
// From one token's router logits (n_expert of them): softmax, top `k`, renormalised if `norm`.
void route(std::span<const float> logits, int k, bool norm, Route& out);

// gate[i] = act(gate[i], up[i]) for the config's FFN activation (SwiGLU, GeGLU, or gpt-oss's
// clamped SwiGLU), in place, over `rows` rows of n; shared by the dense and the MoE FFN. Row by
// row, so that a token's values do not depend on the rows beside it (where the vector
// kernels' tails fall).
void ffn_activation(const ModelConfig& c, float* gate, const float* up, int64_t rows, int64_t n);

// Scratch of the MoE FFN, reused between calls (one per Forward).
class MoeFfn {
 public:
  // out[t * n_embd ...] = the layer's MoE FFN of xn[t * n_embd ...] for t in [0, n_tokens).
  void run(const ModelConfig& c, const LayerWeights& L, const float* xn, int64_t n_tokens, float* out,
           ThreadPool* pool);

 private:
  // Qwen3.5-MoE: out += sigmoid(shared_gate_inp . x) * down(silu(gate x) * up x), per token.
  void add_shared_expert(const ModelConfig& c, const LayerWeights& L, const float* xn, int64_t n_tokens, float* out,
                         ThreadPool* pool);

  std::vector<float> logits_, x_, gate_, up_, y_;
  std::vector<Route> routes_;
  std::vector<int64_t> first_;                    // tokens of expert e: slots [first_[e], first_[e + 1])
  std::vector<std::pair<int64_t, float>> slots_;  // (token, weight), grouped by expert
};

}  // namespace triattn
