#pragma once
// Writing statistics into a model (`triattn calibrate --into`, docs/commands.md): a GGUF is
// copied to a new file with the statistics added; an HF directory gets its
// triattention.safetensors in place (the weights files are not touched).
#include <string>

#include "calib/stats_file.h"

namespace triattn {

// Copies every metadata key (same type and value) and every tensor (same type, shape,
// bytes, order, alignment) of `model_gguf` to `out`, then adds the statistics as
// triattention.* string keys and f32 tensors (formats/stats_names.h). Atomic: `out` is
// complete or untouched. Throws Error when `out` is `model_gguf`, or when the model already
// holds statistics and `replace` is false (with `replace`, its old ones are dropped).
void embed_stats_in_gguf(const std::string& model_gguf, const std::string& out, const HeadStats& stats,
                         const StatsInfo& info, bool replace);
// Writes DIR/triattention.safetensors (a stats file); Error when one is there and `replace`
// is false. Returns the path written.
std::string write_stats_beside_hf(const std::string& model_dir, const HeadStats& stats, const StatsInfo& info,
                                  bool replace);

}  // namespace triattn
