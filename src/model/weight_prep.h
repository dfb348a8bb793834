#pragma once
// Load-time fixes shared by every loader, so the forward pass sees one canonical layout:
// small vectors (norms, biases) as f32, q/k rows in "halves" RoPE order, shapes checked.
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/arch.h"
#include "model/model_builder.h"

namespace triattn {

// Returns an f32 copy owned by `model` (or the view itself if already f32).
TensorView prep_f32(ModelBuilder& model, const TensorView& t);
// An f32 copy owned by `model` with `add` added to every element (Gemma's HF norms: 1 + w).
TensorView prep_f32_plus(ModelBuilder& model, const TensorView& t, float add);
// An f32 copy owned by `model` with f applied to every element.
TensorView prep_f32_map(ModelBuilder& model, const TensorView& t, const std::function<float(float)>& f);
// Rows of each head reordered from interleaved pairs (2i, 2i+1) to halves (i, i + d/2):
// HF row h*d + j comes from stored row h*d + 2j (j < d/2) or h*d + 2(j - d/2) + 1.
// Works for any dtype (whole rows move). For 1-D bias vectors too.
TensorView prep_unpermute_rows(ModelBuilder& model, const TensorView& t, int n_heads, int head_dim);
// One 3-D tensor [n, rows, cols] owned by `model`, matrix i a copy of parts[i] (HF stores
// each expert's matrix on its own; the runtime reads them as GGUF lays them out). Every part
// must have the same type and shape; `what` names them in the error.
TensorView prep_stack(ModelBuilder& model, const std::vector<TensorView>& parts, const std::string& what);
// Where a role's tensor lives in the weights (layer ignored for model-wide roles).
TensorView* role_slot(ModelWeights& w, TensorRole r, int layer);
// Every tensor of architecture `a` the config needs, except the token embedding and the
// output matrix (whose tying the loaders resolve), looked up by its name in format f
// through `required` (which throws when one is missing); vectors become f32 (norms + 1 for
// HF files of architectures that store them so); HF experts are stacked (prep_stack).
// HF checkpoints of fused-expert architectures (gpt-oss) go through loader_hf_experts.h,
// which looks for the MXFP4 form with `find` (empty view when a name is missing).
// Sizes the layer table.
void fill_arch_weights(ModelBuilder& m, const ArchInfo& a, TensorFormat f,
                       const std::function<TensorView(const std::string&)>& required,
                       const std::function<TensorView(const std::string&)>& find = nullptr);
// Throws "<what>: tensor '<name>' has shape [..], expected [..]".
void check_shape(const TensorView& t, const std::vector<int64_t>& expected, const std::string& name,
                 const std::string& what);
// Checks every tensor of the loaded model against its config (shapes and usable dtypes).
void check_model_weights(const Model& model);

}  // namespace triattn
