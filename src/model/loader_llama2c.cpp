// llama2.c fp32 checkpoints (Karpathy's format): interleaved RoPE, theta 10000, eps 1e-5.
// The tokenizer tokNNN.bin is looked up beside the checkpoint.
#include <filesystem>

#include "core/error.h"
#include "formats/llama2c.h"
#include "model/loaders.h"
#include "model/weight_prep.h"
#include "tokenizer/tokenizer.h"

namespace triattn {

namespace {
std::string find_llama2c_tokenizer(const std::filesystem::path& model_path, int vocab_size) {
  const auto dir = model_path.parent_path().empty() ? std::filesystem::path(".") : model_path.parent_path();
  const auto exact = dir / ("tok" + std::to_string(vocab_size) + ".bin");
  if (std::filesystem::exists(exact)) return exact.string();
  const auto generic = dir / "tokenizer.bin";
  if (std::filesystem::exists(generic)) return generic.string();
  fail(model_path.string(), ": llama2.c tokenizer not found (looked for ", exact.string(), " and ",
       generic.string(), ")");
}
}  // namespace

void load_llama2c_model(Model& m, const std::string& path) {
  auto ck = Llama2cCheckpoint::open(path);
  m.keep_alive_.push_back(ck);
  const Llama2cHeader& h = ck->header();
  ModelConfig& c = m.config_;
  c.arch = "llama";
  c.name = std::filesystem::path(path).stem().string();
  c.n_layers = h.n_layers;
  c.n_embd = h.dim;
  c.n_ff = h.hidden_dim;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.head_dim = h.n_heads > 0 ? h.dim / h.n_heads : 0;
  c.vocab_size = h.vocab_size < 0 ? -h.vocab_size : h.vocab_size;
  c.context_length = h.seq_len;
  c.rms_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.tied_embeddings = h.shared_classifier;
  c.validate();

  ModelWeights& w = m.weights_;
  w.tok_embd = ck->tok_embeddings;
  w.output = ck->wcls;
  w.output_norm = ck->rms_final;
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    const Llama2cLayer& s = ck->layers[l];
    LayerWeights& L = w.layers[l];
    L.attn_norm = s.rms_att;
    L.ffn_norm = s.rms_ffn;
    L.wq = prep_unpermute_rows(m, s.wq, c.n_heads, c.head_dim);
    L.wk = prep_unpermute_rows(m, s.wk, c.n_kv_heads, c.head_dim);
    L.wv = s.wv;
    L.wo = s.wo;
    L.w_gate = s.w1;
    L.w_up = s.w3;
    L.w_down = s.w2;
  }
  m.tokenizer_ = load_tokenizer_llama2c(find_llama2c_tokenizer(path, c.vocab_size));
}

}  // namespace triattn
