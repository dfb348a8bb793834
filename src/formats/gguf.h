#pragma once
// GGUF v2/v3 reader (mmap, zero-copy tensors) and writer.
// Every metadata value type is supported, including nested arrays. All structural errors
// (bad magic, truncated file, offsets past the end, unknown types, absurd counts) raise
// triattn::Error naming the file and the problem; the reader never reads out of bounds.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace triattn {

enum class GgufType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

struct GgufValue;
struct GgufArray {
  GgufType elem_type = GgufType::UINT8;
  std::vector<GgufValue> items;
  bool operator==(const GgufArray& o) const;  // same element type and items
};

struct GgufValue {
  GgufType type = GgufType::UINT8;
  // Integers of every width are held as int64/uint64, floats as double, with `type`
  // recording the exact GGUF type (so a writer can round-trip it).
  std::variant<int64_t, uint64_t, double, bool, std::string, GgufArray> value;

  bool is_int() const;
  int64_t as_int() const;        // any integer type (throws Error otherwise)
  double as_float() const;       // any float or integer type
  bool as_bool() const;
  const std::string& as_string() const;
  const GgufArray& as_array() const;
  bool operator==(const GgufValue& o) const;  // same type and value (deep for arrays)
};

struct GgufTensorInfo {
  std::string name;
  DType type = DType::F32;
  std::vector<int64_t> shape;  // outermost first (GGUF ne[] reversed)
  uint64_t offset = 0;         // relative to the start of the tensor data section
  const void* data = nullptr;  // into the mapping
  size_t nbytes = 0;
  TensorView view() const { return TensorView{type, shape, data}; }
};

class GgufFile {
 public:
  static std::shared_ptr<GgufFile> open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  // The whole mapping (tensor data pointers point into it).
  const MappedFile& file() const { return file_; }

  const std::map<std::string, GgufValue>& metadata() const { return kv_; }
  const GgufValue* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // Typed getters: throw Error "<path>: metadata key 'k' missing" / "... has type X, expected Y".
  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::optional<int64_t> get_int_opt(const std::string& key) const;
  std::optional<double> get_float_opt(const std::string& key) const;
  std::optional<std::string> get_string_opt(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<double> get_float_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;

 private:
  GgufFile() = default;
  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue> kv_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
  friend class GgufReader;
};

// Builds a GGUF v3 file in memory order: metadata in insertion order, tensors aligned.
class GgufWriter {
 public:
  void set(const std::string& key, GgufValue v);
  void set_string(const std::string& key, const std::string& v);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
  // shape outermost first; data is copied. nbytes must equal row_bytes(type, cols) * rows.
  void add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape,
                  const void* data, size_t nbytes);
  // For tensors too large to hold in memory: `fill` is called once per row, in row order,
  // during write(), and must fill row_bytes(type, shape.back()) bytes at dst.
  using RowFiller = std::function<void(int64_t row, uint8_t* dst)>;
  void add_tensor_rows(const std::string& name, DType type, const std::vector<int64_t>& shape,
                       RowFiller fill);
  // alignment must be a power of two; a value other than 32 is recorded as general.alignment.
  void write(const std::string& path, uint64_t alignment = 32) const;

 private:
  std::vector<std::pair<std::string, GgufValue>> kv_;
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
    RowFiller fill;  // set instead of bytes for add_tensor_rows
  };
  void check_new_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape) const;
  std::vector<Tensor> tensors_;
};

}  // namespace triattn
