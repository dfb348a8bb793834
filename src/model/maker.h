#pragma once
// Random-weight models of real shapes, for tests and benchmarks where no real weights are
// on hand. Weights are a pure function of (seed, HF tensor name, row, column), so the GGUF
// and the Hugging Face copy made with the same seed are the SAME model (the GGUF's llama q/k
// rows permuted exactly as llama.cpp's converter does). Files are written row by row, so even
// an 8B model never needs more than one row in memory.
#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "model/config.h"

namespace triattn {

// "qwen3-0.6b", "qwen3-8b", "llama-3.2-1b", "deepseek-r1-distill-qwen-7b" (real shapes) and
// "tiny-llama", "tiny-qwen2", "tiny-qwen3" (2 layers, n_embd 64, 4/2 heads, head_dim 16,
// n_ff 128, vocab 512). Throws Error listing the known names.
// "gemma-2-2b", "gemma-3-4b" (real shapes) and "tiny-gemma2" (2 layers: sliding, full; window
// 4, strong soft-caps), "tiny-gemma3" (6 layers: five sliding, one full; window 4).
// "qwen3-30b-a3b" (real shape: 48 MoE layers, 128 experts of 768, 8 used) and "tiny-qwen3moe"
// (3 layers, the middle one dense; 8 experts of 32, 2 used).
// "gpt-oss-20b" (real shape: 24 layers alternating sliding 128 / full, 32 experts of 2880, 4
// used, YaRN x32) and "tiny-gptoss" (4 layers, window 4, 8 experts of 32, 2 used, YaRN x32
// over an original context of 512).
// "gemma-4-31b" (real shape: 60 layers, sliding 32/16 heads of 256, full 32/4 of 512 with V = K
// and proportional RoPE) and "tiny-gemma4" (8 layers, 5 and 7 full; sliding 4/2 heads of 16,
// window 8; full 4/1 heads of 32, 4 of 16 pairs rotating).
ModelConfig model_preset(const std::string& name);
// Changes the layer count (make-model --layers), the layer pattern following the architecture
// (a MoE preset's dense layers stay dense, added layers are MoE).
void set_layer_count(ModelConfig& c, int n_layers);
// Changes a MoE preset's experts (make-model --experts, --experts-used, --expert-ff; 0 keeps
// the preset's; fewer experts than used clamps the used count). Throws for a dense preset.
void set_experts(ModelConfig& c, int n_expert, int n_used, int n_ff);

struct MakerOptions {
  // Matrices (embedding, projections, output). GGUF: any weight type; a K-quant whose rows
  // are not a multiple of 256 falls back to Q8_0, as llama.cpp does. HF: F32, F16 or BF16.
  // Norm vectors are F32 in GGUF and biases too; in HF they use the weight type.
  DType weight_type = DType::F16;
  uint64_t seed = 1;
  // Q4_K_M, as llama.cpp's quantizer writes it (weight_type is then Q4_K): Q6_K for the
  // output matrix (the token embedding when tied) and for attn_v and ffn_down (ffn_down_exps)
  // in the first and last eighth of the layers and every third layer in between; Q4_K
  // elsewhere. A MoE router (ffn_gate_inp) stays F32, as llama.cpp keeps it.
  bool q4_k_m = false;
  // MoE expert matrices, when set: GGUF any weight type (gpt-oss ships MXFP4); HF f32, f16,
  // bf16, or MXFP4 for gpt-oss (its *_blocks / *_scales tensors, as the released checkpoints).
  // Unset: the weight type.
  std::optional<DType> expert_type = std::nullopt;
};

// The weight type make-model writes when none is asked for: "q8_0" for "gguf" (what
// llama.cpp users mostly run), "f32" for "hf" (HF checkpoints hold only f32/f16/bf16, and
// f32 keeps the copy exact for the reference tests). Throws Error for another format.
std::string maker_default_type(const std::string& format);

// The type a GGUF matrix gets: opt's weight type or the Q4_K_M recipe, falling back to
// Q8_0 (then F16) when its rows are not a whole number of blocks. `layer` is -1 for the
// embedding and output matrices; `output` is true for the output matrix (or a tied embedding).
DType maker_matrix_type(const MakerOptions& opt, const std::string& gguf_name, int layer,
                        int n_layers, bool output, int64_t cols);

// One .gguf file with llama.cpp key/tensor names and a synthetic SentencePiece-style vocab
// ("<unk>", "<s>", "</s>", 256 byte tokens, then filler pieces "▁t259", ...).
void write_random_gguf(const ModelConfig& cfg, const MakerOptions& opt, const std::string& path);
// A directory with config.json, model.safetensors, tokenizer.json (the same vocab) and
// tokenizer_config.json. Created if missing.
void write_random_hf(const ModelConfig& cfg, const MakerOptions& opt, const std::string& dir);

}  // namespace triattn
