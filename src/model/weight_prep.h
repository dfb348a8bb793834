#pragma once
// Load-time fixes shared by every loader, so the forward pass sees one canonical layout:
// small vectors (norms, biases) as f32, q/k rows in "halves" RoPE order, shapes checked.
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/model.h"

namespace triattn {

// Returns an f32 copy owned by `model` (or the view itself if already f32).
TensorView prep_f32(Model& model, const TensorView& t);
// Rows of each head reordered from interleaved pairs (2i, 2i+1) to halves (i, i + d/2):
// HF row h*d + j comes from stored row h*d + 2j (j < d/2) or h*d + 2(j - d/2) + 1.
// Works for any dtype (whole rows move). For 1-D bias vectors too.
TensorView prep_unpermute_rows(Model& model, const TensorView& t, int n_heads, int head_dim);
// Throws "<what>: tensor '<name>' has shape [..], expected [..]".
void check_shape(const TensorView& t, const std::vector<int64_t>& expected, const std::string& name,
                 const std::string& what);
// Checks every tensor of the loaded model against its config (shapes and usable dtypes).
void check_model_weights(const Model& model);

}  // namespace triattn
