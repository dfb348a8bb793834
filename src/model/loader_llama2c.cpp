// llama2.c checkpoints (Karpathy's format, every export version): interleaved RoPE, theta
// 10000, eps 1e-5. The tokenizer tokNNN.bin is looked up beside the checkpoint.
//
// Version 2 (*_q80.bin) int8 tensors are dequantized to owned fp32 tensors here, not
// converted to the runtime's Q8_0: export.py quantizes the flattened tensor in groups that
// need not line up with rows (stories260K's w2 has rows of 172 values and groups of 32),
// and its fp32 scales would lose bits as Q8_0's fp16 ones. Dequantized, the weights are
// exactly those runq.c computes with, and the files in this format are small models.
#include <filesystem>

#include "core/error.h"
#include "formats/llama2c.h"
#include "formats/model_limits.h"
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
// The fp32 values in place, or a dequantized copy owned by the model.
TensorView weight_f32(ModelBuilder& m, const Llama2cTensor& t) {
  if (!t.quantized()) return t.f32_view();
  LargeBuffer& buf = m.own(static_cast<size_t>(t.numel()) * sizeof(float));
  t.dequantize(reinterpret_cast<float*>(buf.data()));
  return TensorView{DType::F32, t.shape, buf.data()};
}

// q/k rows reordered from interleaved pairs to halves; a dequantized copy made on the way is
// dropped once reordered (only the reordered one is read).
TensorView qk_rows(ModelBuilder& m, const Llama2cTensor& t, int n_heads, int head_dim) {
  const size_t owned_before = m.owned().size();
  TensorView v = prep_unpermute_rows(m, weight_f32(m, t), n_heads, head_dim);
  if (m.owned().size() == owned_before + 2) m.owned().erase(m.owned().begin() + static_cast<ptrdiff_t>(owned_before));
  return v;
}

}  // namespace

void load_llama2c_model(ModelBuilder& m, const std::string& path) {
  auto ck = Llama2cCheckpoint::open(path);
  m.keep_alive(ck);
  const Llama2cHeader& h = ck->header();
  ModelConfig& c = m.config();
  c.arch = "llama";
  c.name = std::filesystem::path(path).stem().string();
  c.n_layers = h.n_layers;
  c.n_embd = h.dim;
  c.n_ff = h.hidden_dim;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.head_dim = h.n_heads > 0 ? h.dim / h.n_heads : 0;
  c.vocab_size = h.vocab_size;  // positive: the reader took the classifier flag from its sign
  c.context_length = h.seq_len;
  c.rms_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.tied_embeddings = h.shared_classifier;
  c.validate(path);

  ModelWeights& w = m.weights();
  w.tok_embd = weight_f32(m, ck->tok_embeddings);
  w.output = h.shared_classifier ? w.tok_embd : weight_f32(m, ck->wcls);
  w.output_norm = weight_f32(m, ck->rms_final);
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    const Llama2cLayer& s = ck->layers[l];
    LayerWeights& L = w.layers[l];
    L.attn_norm = weight_f32(m, s.rms_att);
    L.ffn_norm = weight_f32(m, s.rms_ffn);
    L.wq = qk_rows(m, s.wq, c.n_heads, c.head_dim);
    L.wk = qk_rows(m, s.wk, c.n_kv_heads, c.head_dim);
    L.wv = weight_f32(m, s.wv);
    L.wo = weight_f32(m, s.wo);
    L.w_gate = weight_f32(m, s.w1);
    L.w_up = weight_f32(m, s.w3);
    L.w_down = weight_f32(m, s.w2);
  }
  // A NaN/Inf weight (or int8 group scale, seen in the dequantized copy) is named here, in
  // llama2.c's names, not as NaN logits later.
  require_finite(w.tok_embd, path, "token_embedding_table");
  if (!h.shared_classifier) require_finite(w.output, path, "wcls");
  require_finite(w.output_norm, path, "rms_final_weight");
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[l];
    const std::pair<const TensorView*, const char*> named[] = {
        {&L.attn_norm, "rms_att_weight"}, {&L.wq, "wq"}, {&L.wk, "wk"}, {&L.wv, "wv"}, {&L.wo, "wo"},
        {&L.ffn_norm, "rms_ffn_weight"}, {&L.w_gate, "w1"}, {&L.w_down, "w2"}, {&L.w_up, "w3"}};
    for (const auto& [t, name] : named) require_finite(*t, path, std::string(name) + " of layer " + std::to_string(l));
  }
  m.set_tokenizer(load_tokenizer_llama2c(find_llama2c_tokenizer(path, c.vocab_size)));
}

}  // namespace triattn
