#include "model/model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/read_file.h"
#include "model/loaders.h"
#include "model/model_builder.h"
#include "model/weight_prep.h"
#include "model/weight_repack.h"

namespace triattn {

namespace {
std::string file_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char buf[4] = {};
  in.read(buf, 4);
  return std::string(buf, static_cast<size_t>(in.gcount()));
}
}  // namespace

ModelBuilder::ModelBuilder(std::string path) : m_(new Model) { m_->path_ = std::move(path); }

void ModelBuilder::keep_alive(std::shared_ptr<void> source, const MappedFile* mapped) {
  m_->keep_alive_.push_back(std::move(source));
  if (mapped) m_->mapped_files_.push_back(mapped);
}

void ModelBuilder::check() const {
  const Model& m = *m_;
  if (!m.tokenizer_) fail(m.path_, ": internal: the loader set no tokenizer");
  if (m.config_.vocab_size != m.tokenizer_->vocab_size() && m.tokenizer_->vocab_size() > m.config_.vocab_size)
    fail(m.path_, ": tokenizer has ", m.tokenizer_->vocab_size(), " tokens but the model only ", m.config_.vocab_size);
  check_model_weights(m);
}

std::shared_ptr<const Model> ModelBuilder::finish() { return std::move(m_); }

std::shared_ptr<const Model> Model::load(const std::string& path, const LoadOptions& options) {
  ModelBuilder b(path);
  namespace fs = std::filesystem;
  if (!fs::exists(path)) fail(path, ": no such file or directory");
  if (fs::is_directory(path)) {
    if (!fs::exists(fs::path(path) / "config.json"))
      fail(path, ": directory has no config.json (expected a Hugging Face model directory)");
    load_hf_model(b, path);
  } else {
    require_regular_file(path);  // a FIFO or device would block or stream forever below
    const std::string magic = file_magic(path);
    if (magic == "GGUF") {
      load_gguf_model(b, path);
    } else if (magic == "ak42" || fs::path(path).extension() == ".bin") {  // llama2.c: versioned or legacy
      load_llama2c_model(b, path);
    } else {
      fail(path, ": unknown model format (expected a .gguf file, a Hugging Face directory or a llama2.c .bin)");
    }
  }
  b.check();
  if (options.repack && options.before_repack) options.before_repack(b.weights());
  if (options.repack) repack_weights(b, options.threads);
  return b.finish();
}

std::vector<TensorView*> LayerWeights::matrices() {
  return {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down, &router, &dn_qkv, &dn_z, &dn_beta, &dn_alpha, &dn_out,
          &shared_gate, &shared_up, &shared_down};
}

std::vector<const TensorView*> LayerWeights::matrices() const {
  const auto m = const_cast<LayerWeights*>(this)->matrices();
  return {m.begin(), m.end()};
}

std::vector<TensorView*> LayerWeights::expert_stacks() { return {&gate_exps, &up_exps, &down_exps}; }

std::vector<const TensorView*> LayerWeights::expert_stacks() const {
  const auto m = const_cast<LayerWeights*>(this)->expert_stacks();
  return {m.begin(), m.end()};
}

std::vector<const TensorView*> LayerWeights::tensors() const {
  std::vector<const TensorView*> t = matrices();
  for (const TensorView* e : expert_stacks()) t.push_back(e);
  for (const TensorView* v : {&attn_norm, &bq, &bk, &bv, &q_norm, &k_norm, &post_attn_norm, &ffn_norm, &post_ffn_norm,
                              &bo, &sinks, &router_bias, &gate_exps_bias, &up_exps_bias, &down_exps_bias, &dn_conv,
                              &dn_dt_bias, &dn_a, &dn_norm, &shared_gate_inp, &layer_scale})
    t.push_back(v);
  return t;
}

size_t Model::owned_bytes() const {
  size_t n = 0;
  for (const LargeBuffer& buf : owned_) n += buf.size();
  return n;
}

size_t Model::weight_bytes() const {
  size_t total = weights_.output_norm.nbytes() + weights_.output.nbytes();
  for (const LayerWeights& L : weights_.layers)
    for (const TensorView* t : L.tensors())
      if (!t->empty()) total += t->nbytes();
  return total;
}

size_t Model::expert_weight_bytes() const {
  size_t experts = 0;
  for (const LayerWeights& L : weights_.layers)
    for (const TensorView* t : L.expert_stacks())
      if (!t->empty()) experts += t->nbytes();
  return experts;
}

size_t Model::active_weight_bytes() const {
  const size_t experts = expert_weight_bytes();
  if (experts == 0) return weight_bytes();
  const double active = static_cast<double>(config_.n_expert_used) / config_.n_expert;
  return weight_bytes() - experts + static_cast<size_t>(static_cast<double>(experts) * active);
}

std::string Model::weight_type_name() const {
  std::map<DType, size_t> bytes;
  for (const LayerWeights& L : weights_.layers) {
    std::vector<const TensorView*> ts = L.matrices();
    for (const TensorView* e : L.expert_stacks()) ts.push_back(e);
    for (const TensorView* t : ts)
      if (!t->empty() && t != &L.router) bytes[file_dtype(t->type)] += t->nbytes();  // the router is f32 by convention
  }
  // Most bytes first; a mix (Q4_K_M is Q4_K with some Q6_K) names every type: "q4_k+q6_k".
  std::vector<std::pair<size_t, DType>> order;
  for (auto [t, b] : bytes) order.emplace_back(b, t);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string name;
  for (const auto& [b, t] : order) name += (name.empty() ? "" : "+") + std::string(dtype_name(t));
  return name.empty() ? std::string(dtype_name(DType::F32)) : name;
}

}  // namespace triattn
