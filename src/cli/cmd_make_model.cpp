// triattn make-model: random-weight models of real shapes, for tests and benchmarks.
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "model/maker.h"

namespace triattn::cli {

int cmd_make_model(const std::vector<std::string>& args) {
  CLI::App app{"Write a random-weight model (GGUF or Hugging Face directory)", "triattn make-model"};
  std::string preset, format = "gguf", type, expert_type, out;
  MakerOptions opt;
  int layers = 0, kv_heads = 0, ctx = 0, vocab = 0, experts = 0, experts_used = 0, expert_ff = 0;
  app.add_option("--preset", preset,
                 "shape: qwen3-0.6b, qwen3-8b, llama-3.2-1b, deepseek-r1-distill-qwen-7b, gemma-2-2b, gemma-3-4b, "
                 "qwen3-30b-a3b, gpt-oss-20b, tiny-llama, tiny-qwen2, tiny-qwen3, tiny-gemma2, tiny-gemma3, "
                 "tiny-qwen3moe, tiny-gptoss")
      ->required();
  app.add_option("--format", format, "gguf or hf")->capture_default_str();
  // The default depends on the format (an HF checkpoint cannot hold q8_0), so it is chosen
  // after parsing and spelled out here rather than captured.
  app.add_option("--type", type,
                 "weight type: f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, or q4_k_m (llama.cpp's Q4_K/Q6_K mix); "
                 "hf: f32, f16 or bf16 [default: " + maker_default_type("gguf") + " for gguf, " +
                     maker_default_type("hf") + " for hf]");
  app.add_option("--expert-type", expert_type,
                 "MoE expert matrices' type (default: --type): gguf any weight type, e.g. mxfp4 (gpt-oss's); "
                 "hf f32, f16, bf16, or mxfp4 for gpt-oss (*_blocks/*_scales as the released checkpoints)");
  app.add_option("-o,--output", out, "output .gguf file or HF directory")->required();
  app.add_option("--seed", opt.seed, "weight seed (same seed = same model in both formats)")->capture_default_str();
  app.add_option("--layers", layers, "override the preset's layer count");
  app.add_option("--kv-heads", kv_heads,
                 "override the preset's KV head count (a divisor of its query heads; 1 = multi-query attention)");
  app.add_option("--ctx", ctx, "override the preset's context length");
  app.add_option("--vocab", vocab, "override the preset's vocabulary size");
  app.add_option("--experts", experts, "override a MoE preset's expert count");
  app.add_option("--experts-used", experts_used, "override a MoE preset's experts per token");
  app.add_option("--expert-ff", expert_ff, "override a MoE preset's expert FFN size");
  if (int rc = parse(app, args); rc >= 0) return rc;

  if (type.empty()) type = maker_default_type(format);  // also refuses an unknown --format
  ModelConfig cfg = model_preset(preset);
  if (layers > 0) set_layer_count(cfg, layers);
  if (kv_heads > 0 && cfg.layer_shape_differs())
    fail("--kv-heads: '", preset, "' gives its sliding and full layers different KV heads; it cannot set both");
  if (kv_heads > 0) cfg.n_kv_heads = kv_heads;
  if (ctx > 0) cfg.context_length = ctx;
  if (vocab > 0) cfg.vocab_size = vocab;
  if (experts > 0 || experts_used > 0 || expert_ff > 0) set_experts(cfg, experts, experts_used, expert_ff);
  cfg.validate();
  opt.q4_k_m = type == "q4_k_m";
  auto t = opt.q4_k_m ? std::optional<DType>(DType::Q4_K) : dtype_from_name(type);
  if (!t) fail("--type '", type, "' is not a weight type");
  opt.weight_type = *t;
  if (!expert_type.empty()) {
    opt.expert_type = dtype_from_name(expert_type);
    if (!opt.expert_type) fail("--expert-type '", expert_type, "' is not a weight type");
    if (!cfg.has_moe_layers()) fail("--expert-type applies to mixture-of-experts presets; '", preset, "' has none");
  }
  if (opt.q4_k_m && format != "gguf") fail("--type q4_k_m is a GGUF mix; HF checkpoints are f32, f16 or bf16");
  if (format == "gguf") {
    write_random_gguf(cfg, opt, out);
  } else {
    write_random_hf(cfg, opt, out);
  }
  std::cerr << "wrote " << out << ": " << cfg.describe() << ", " << type << "\n";
  return 0;
}

}  // namespace triattn::cli
