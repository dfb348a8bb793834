// fuzz_make_seeds OUTDIR: small valid inputs written by the library's own writers, for the
// seed corpora (scripts/fuzz.sh): random-weight GGUF models (q8_0 llama, f32 qwen3), a tiny
// Hugging Face directory (qwen2, f32) and a stats file for the tiny llama shape.
#include <cstdio>
#include <filesystem>

#include "calib/stats_file.h"
#include "core/error.h"
#include "kv/policy.h"
#include "model/maker.h"

using namespace triattn;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds OUTDIR\n");
    return 2;
  }
  const std::string out = argv[1];
  try {
    std::filesystem::create_directories(out);
    MakerOptions q8;
    q8.weight_type = DType::Q8_0;
    ModelConfig llama = model_preset("tiny-llama");
    llama.n_layers = 1;
    llama.vocab_size = 300;  // 3 specials + 256 bytes + a few pieces: a small file
    write_random_gguf(llama, q8, out + "/tiny-llama-q8_0.gguf");
    MakerOptions f32;
    f32.weight_type = DType::F32;
    ModelConfig qwen3 = model_preset("tiny-qwen3");
    qwen3.n_layers = 1;
    qwen3.vocab_size = 300;
    write_random_gguf(qwen3, f32, out + "/tiny-qwen3-f32.gguf");
    ModelConfig qwen2 = model_preset("tiny-qwen2");
    qwen2.n_layers = 1;
    qwen2.vocab_size = 300;
    write_random_hf(qwen2, f32, out + "/hf-tiny-qwen2");

    const ModelConfig cfg = model_preset("tiny-llama");
    HeadStats s;
    s.n_layers = cfg.n_layers, s.n_heads = cfg.n_heads, s.n_kv_heads = cfg.n_kv_heads, s.head_dim = cfg.head_dim;
    const size_t nq = static_cast<size_t>(cfg.n_layers * cfg.n_heads * cfg.head_dim / 2);
    const size_t nk = static_cast<size_t>(cfg.n_layers * cfg.n_kv_heads * cfg.head_dim / 2);
    for (size_t i = 0; i < nq; ++i) {
      s.q_mean_real.push_back(0.01f * static_cast<float>(i % 17));
      s.q_mean_imag.push_back(-0.02f * static_cast<float>(i % 5));
      s.q_abs_mean.push_back(1.0f + 0.01f * static_cast<float>(i % 13));
    }
    for (size_t i = 0; i < nk; ++i) {
      s.k_mean_real.push_back(0.03f * static_cast<float>(i % 7));
      s.k_mean_imag.push_back(0.01f);
      s.k_abs_mean.push_back(2.0f);
    }
    write_stats_file(out + "/tiny-llama.stats.safetensors", s, stats_info_for(cfg, 1000, 12345));
  } catch (const Error& e) {
    std::fprintf(stderr, "fuzz_make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
