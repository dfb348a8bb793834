#pragma once
// Where a model file carries TriAttention statistics (docs/design.md, "Statistics inside the
// model"): loaders skip these names, the calibration writer and the stats reader use them.
namespace triattn {

// GGUF: every statistics tensor and metadata key is this prefix + the stats file's name
// ("triattention.q_mean_real", "triattention.token_count").
inline constexpr const char* kGgufStatsPrefix = "triattention.";
// Hugging Face directory: our stats file, beside the weights (the checkpoint reader only
// opens model.safetensors or the shards of its index, so it never mistakes it for weights).
inline constexpr const char* kHfStatsFileName = "triattention.safetensors";

}  // namespace triattn
