#pragma once
// safetensors reader (mmap, zero-copy) and writer, plus Hugging Face checkpoints that are
// one model.safetensors or shards listed in model.safetensors.index.json.
// Malformed headers, truncated files, overlapping/out-of-range offsets, unknown dtypes and
// shape/size mismatches raise triattn::Error naming the file and the tensor.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace triattn {

struct SafetensorsTensor {
  std::string name;
  DType type = DType::F32;  // F32, F16, BF16, I32 supported
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;
  TensorView view() const { return TensorView{type, shape, data}; }
};

class SafetensorsFile {
 public:
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);
  const std::string& path() const { return file_.path(); }
  // The whole mapping (tensor data pointers point into it).
  const MappedFile& file() const { return file_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  MappedFile file_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  friend class SafetensorsReader;
};

// All tensors of an HF model directory: model.safetensors, or the shards named by
// model.safetensors.index.json (every shard listed must exist and hold its tensors).
class HfCheckpoint {
 public:
  static HfCheckpoint open(const std::string& dir);
  // Also resolves a tied-weight alias: a name absent from the shards that __metadata__ maps
  // to a present tensor (torch's shared-tensor convention, e.g. "model.embed_tokens.weight"
  // -> "lm_head.weight").
  const SafetensorsTensor* find(const std::string& name) const;
  std::vector<std::string> names() const;  // stored tensors only, sorted
  size_t shard_count() const { return shards_.size(); }
  // The file that lists the tensors, for messages: model.safetensors or the index json.
  const std::string& source() const { return source_; }
  // Union of the shards' __metadata__.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::vector<std::shared_ptr<SafetensorsFile>> shards_;
  std::map<std::string, const SafetensorsTensor*> index_;
  std::map<std::string, std::string> metadata_;
  std::string source_;
};

class SafetensorsWriter {
 public:
  void set_metadata(const std::string& key, const std::string& value);
  // shape outermost first; data copied; nbytes must match dtype * numel.
  void add(const std::string& name, DType type, const std::vector<int64_t>& shape, const void* data,
           size_t nbytes);
  // For tensors too large to hold in memory: `fill` is called once per row, in row order,
  // during write(), and must fill shape.back() elements of the dtype at dst.
  using RowFiller = std::function<void(int64_t row, uint8_t* dst)>;
  void add_rows(const std::string& name, DType type, const std::vector<int64_t>& shape, RowFiller fill);
  void write(const std::string& path) const;

 private:
  std::map<std::string, std::string> metadata_;
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
    RowFiller fill;  // set instead of bytes for add_rows
  };
  void check_new_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape) const;
  std::vector<Tensor> tensors_;
};

}  // namespace triattn
