#pragma once
// gpt-oss's experts as Hugging Face checkpoints store them (ArchTraits::hf_fused_experts),
// rewritten at load into the runtime's layout: GGUF's [n_expert, rows, cols] stacks, one
// matrix per expert with rows = outputs, and f32 [n_expert, n] biases.
//   gate_up_proj [E, n_embd, 2 F] (input major, gate = [..., ::2], up = [..., 1::2]) and
//   down_proj [E, F, n_embd] in f32/f16/bf16: transposed (and split) in their own type;
//   gate_up_proj_blocks [E, 2 F, n_embd/32, 16] + _scales [E, 2 F, n_embd/32] (MXFP4, output
//   major as the original checkpoints ship): rows split, nibbles moved (ops/mxfp4_layout.h);
//   gate_up_proj_bias [E, 2 F] split the same way; down_proj_bias [E, n_embd] as is.
#include <functional>
#include <string>

#include "core/tensor.h"
#include "model/arch.h"
#include "model/model_builder.h"

namespace triattn {

using TensorLookup = std::function<TensorView(const std::string&)>;

// The tensor of expert role t.role (GateExps, UpExps, DownExps or their biases) of `layer`.
// `find` returns an empty view for a missing name, `required` throws.
TensorView hf_fused_expert_tensor(ModelBuilder& m, const ArchTensor& t, int layer, const TensorLookup& find,
                                  const TensorLookup& required);

}  // namespace triattn
