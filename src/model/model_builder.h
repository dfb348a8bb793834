#pragma once
// The one way a Model is made: loaders (model/loader_*.cpp) and load-time passes
// (weight_prep, weight_repack) fill a ModelBuilder; check() checks the weights against the
// config, finish() hands out the immutable, shared Model.
#include <memory>
#include <string>

#include "model/model.h"

namespace triattn {

class ModelBuilder {
 public:
  explicit ModelBuilder(std::string path);

  const std::string& path() const { return m_->path_; }
  ModelConfig& config() { return m_->config_; }
  ModelWeights& weights() { return m_->weights_; }
  const Model& model() const { return *m_; }
  // A buffer owned by the model (a tensor rewritten at load time).
  LargeBuffer& own(size_t bytes) { return m_->owned_.emplace_back(bytes); }
  std::vector<LargeBuffer>& owned() { return m_->owned_; }
  // Keeps `source` (an mmap, a checkpoint) alive as long as the model; `mapped` is the
  // mapping its views point into, when it is one (the repack pass releases its pages).
  void keep_alive(std::shared_ptr<void> source, const MappedFile* mapped = nullptr);
  const std::vector<const MappedFile*>& mapped_files() const { return m_->mapped_files_; }
  void warn(std::string message) { m_->warnings_.push_back(std::move(message)); }
  void set_tokenizer(std::unique_ptr<Tokenizer> t) { m_->tokenizer_ = std::move(t); }
  bool has_tokenizer() const { return m_->tokenizer_ != nullptr; }

  // The tokenizer fits the vocabulary and every tensor its config (shapes, dtypes); throws.
  void check() const;
  std::shared_ptr<const Model> finish();

 private:
  std::shared_ptr<Model> m_;
};

}  // namespace triattn
