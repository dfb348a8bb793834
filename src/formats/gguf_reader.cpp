// GGUF v2/v3 reader. The whole file is mapped; metadata is parsed into GgufValues and tensor
// data is used in place. Every count and length is checked against the bytes that remain
// BEFORE anything is allocated, so a corrupted header fails fast with an Error instead of
// exhausting memory or reading out of bounds.
#include <algorithm>
#include <limits>

#include "core/error.h"
#include "formats/byte_cursor.h"
#include "formats/ggml_type_names.h"
#include "formats/gguf.h"
#include "formats/gguf_types.h"

namespace triattn {

using namespace gguf_detail;

namespace {
// Up-front reservation for arrays and tensor lists (see read_value).
constexpr uint64_t kReserveItems = 1u << 16;
}  // namespace

class GgufReader {
 public:
  explicit GgufReader(GgufFile& f)
      : f_(f), in_(f.file_.data(), f.file_.size(), f.file_.path()) {}

  void read() {
    read_header();
    for (uint64_t i = 0; i < n_kv_; ++i) read_kv();
    read_alignment();
    read_tensor_infos();
    place_tensor_data();
  }

 private:
  const std::string& path() const { return f_.file_.path(); }

  void read_header() {
    if (in_.size() < 4) fail(path(), ": not a GGUF file (", in_.size(), " bytes)");
    const uint32_t magic = in_.read<uint32_t>("magic");
    if (magic != kMagic) fail(path(), ": not a GGUF file (bad magic)");
    f_.version_ = in_.read<uint32_t>("version");
    // v1 used 32-bit counts and lengths; v2 and v3 share one layout.
    if (f_.version_ != 2 && f_.version_ != 3)
      fail(path(), ": unsupported GGUF version ", f_.version_, " (supported: 2, 3)");
    n_tensors_ = in_.read<uint64_t>("tensor count");
    n_kv_ = in_.read<uint64_t>("metadata count");
    // Each entry takes a minimum number of bytes, which bounds any honest count.
    if (n_kv_ > in_.remaining() / (8 + 4 + 1))
      fail(path(), ": metadata count ", n_kv_, " is larger than the file allows");
    if (n_tensors_ > in_.remaining() / (8 + 4 + 4 + 8))
      fail(path(), ": tensor count ", n_tensors_, " is larger than the file allows");
  }

  std::string read_string(std::string_view field) {
    const uint64_t len = in_.read<uint64_t>(field);
    if (len > in_.remaining())
      fail(path(), ": ", field, " length ", len, " at offset ", in_.pos() - 8,
           " runs past the end of the file");
    return in_.read_bytes(len, field);
  }

  GgufType read_type(std::string_view field) {
    const uint32_t t = in_.read<uint32_t>(field);
    if (!is_valid_type(t)) fail(path(), ": ", field, ": unknown metadata value type ", t);
    return static_cast<GgufType>(t);
  }

  GgufValue read_value(GgufType type, const std::string& key, int depth) {
    GgufValue v;
    v.type = type;
    switch (type) {
      case GgufType::UINT8: v.value = uint64_t{in_.read<uint8_t>(key)}; break;
      case GgufType::INT8: v.value = int64_t{in_.read<int8_t>(key)}; break;
      case GgufType::UINT16: v.value = uint64_t{in_.read<uint16_t>(key)}; break;
      case GgufType::INT16: v.value = int64_t{in_.read<int16_t>(key)}; break;
      case GgufType::UINT32: v.value = uint64_t{in_.read<uint32_t>(key)}; break;
      case GgufType::INT32: v.value = int64_t{in_.read<int32_t>(key)}; break;
      case GgufType::UINT64: v.value = in_.read<uint64_t>(key); break;
      case GgufType::INT64: v.value = in_.read<int64_t>(key); break;
      case GgufType::FLOAT32: v.value = double{in_.read<float>(key)}; break;
      case GgufType::FLOAT64: v.value = in_.read<double>(key); break;
      case GgufType::BOOL: {
        const uint8_t b = in_.read<uint8_t>(key);
        if (b > 1) fail(path(), ": metadata '", key, "': bool byte is ", int{b}, ", not 0 or 1");
        v.value = b == 1;
        break;
      }
      case GgufType::STRING: v.value = read_string(key); break;
      case GgufType::ARRAY: {
        if (depth >= kMaxArrayDepth)
          fail(path(), ": metadata '", key, "': arrays nested deeper than ", kMaxArrayDepth);
        GgufArray a;
        a.elem_type = read_type(key);
        const uint64_t count = in_.read<uint64_t>(key);
        if (count > in_.remaining() / min_encoded_size(a.elem_type))
          fail(path(), ": metadata '", key, "': array count ", count,
               " is larger than the rest of the file allows");
        // The count is bounded by the bytes left, but an item takes far more memory than its
        // smallest encoding: reserve only what a real file needs and let a dishonest count
        // fail on the bytes it does not have, not on the reservation.
        a.items.reserve(static_cast<size_t>(std::min<uint64_t>(count, kReserveItems)));
        for (uint64_t i = 0; i < count; ++i) a.items.push_back(read_value(a.elem_type, key, depth + 1));
        v.value = std::move(a);
        break;
      }
    }
    return v;
  }

  void read_kv() {
    std::string key = read_string("metadata key");
    const GgufType type = read_type(key);
    GgufValue v = read_value(type, key, 0);
    if (!f_.kv_.emplace(key, std::move(v)).second)
      fail(path(), ": duplicate metadata key '", key, "'");
  }

  void read_alignment() {
    f_.alignment_ = kDefaultAlignment;
    const GgufValue* a = f_.find("general.alignment");
    if (!a) return;
    if (a->type != GgufType::UINT32)
      fail(path(), ": general.alignment has type ", type_name(a->type), ", expected uint32");
    const uint64_t v = std::get<uint64_t>(a->value);
    if (v == 0 || (v & (v - 1)) != 0)
      fail(path(), ": general.alignment ", v, " is not a power of two");
    f_.alignment_ = v;
  }

  void read_tensor_infos() {
    f_.tensors_.reserve(static_cast<size_t>(std::min<uint64_t>(n_tensors_, kReserveItems)));
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      GgufTensorInfo t;
      t.name = read_string("tensor name");
      const uint32_t n_dims = in_.read<uint32_t>(t.name);
      if (n_dims > 4) fail(path(), ": tensor '", t.name, "' has ", n_dims, " dims (at most 4)");
      uint64_t ne[4] = {1, 1, 1, 1};
      for (uint32_t d = 0; d < n_dims; ++d) ne[d] = in_.read<uint64_t>(t.name);
      const uint32_t ggml_type = in_.read<uint32_t>(t.name);
      t.offset = in_.read<uint64_t>(t.name);

      const auto dtype = dtype_from_ggml(ggml_type);
      if (!dtype)
        fail(path(), ": tensor '", t.name, "' has ggml type ", ggml_type_label(ggml_type),
             ", which triattn does not support (supported: ", supported_ggml_types(), ")");
      t.type = *dtype;
      // Empty dims are refused (no model has them, and TensorView divides by the row
      // length); every partial product must fit in int64 (TensorView multiplies them).
      uint64_t prod = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        if (ne[d] == 0) fail(path(), ": tensor '", t.name, "' has an empty dimension");
        if (ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            __builtin_mul_overflow(prod, ne[d], &prod) ||
            prod > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          fail(path(), ": tensor '", t.name, "' has an absurd shape");
      }
      if (ne[0] % static_cast<uint64_t>(block_size(t.type)) != 0)
        fail(path(), ": tensor '", t.name, "' row of ", ne[0], " elements is not a multiple of the ",
             dtype_name(t.type), " block size ", block_size(t.type));
      uint64_t rows = 1;
      for (uint32_t d = 1; d < n_dims; ++d) rows *= ne[d];
      // In 64 bits, checked: row_bytes() itself would wrap for a row of 2^62 f32 values,
      // and a wrapped size would pass the bounds check below.
      const uint64_t blocks = ne[0] / static_cast<uint64_t>(block_size(t.type));
      uint64_t row = 0, total = 0;
      if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(block_bytes(t.type)), &row) ||
          __builtin_mul_overflow(row, rows, &total))
        fail(path(), ": tensor '", t.name, "' (", rows, " rows of ", ne[0], " ", dtype_name(t.type),
             " values) needs more than 2^64 bytes; the file has ", in_.size());
      t.nbytes = static_cast<size_t>(total);
      for (int d = static_cast<int>(n_dims) - 1; d >= 0; --d) t.shape.push_back(static_cast<int64_t>(ne[d]));

      if (!f_.tensor_index_.emplace(t.name, f_.tensors_.size()).second)
        fail(path(), ": duplicate tensor name '", t.name, "'");
      f_.tensors_.push_back(std::move(t));
    }
  }

  void place_tensor_data() {
    if (f_.tensors_.empty()) return;  // vocab-only files need no (padded) data section
    const uint64_t a = f_.alignment_;
    const uint64_t end_of_infos = in_.pos();
    const uint64_t data_start = checked_add(end_of_infos, (a - end_of_infos % a) % a, path());
    const uint64_t file_size = in_.size();
    if (data_start > file_size)
      fail(path(), ": tensor data section starts at ", data_start, ", past the end of the file (",
           file_size, " bytes)");
    const uint64_t data_size = file_size - data_start;

    std::vector<const GgufTensorInfo*> by_offset;
    for (GgufTensorInfo& t : f_.tensors_) {
      if (t.offset % a != 0)
        fail(path(), ": tensor '", t.name, "' offset ", t.offset, " is not a multiple of the alignment ", a);
      if (t.offset > data_size || t.nbytes > data_size - t.offset)
        fail(path(), ": tensor '", t.name, "' data [", t.offset, ", +", t.nbytes,
             ") lies outside the data section (", data_size, " bytes)");
      t.data = f_.file_.data() + data_start + t.offset;
      by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GgufTensorInfo* x, const GgufTensorInfo* y) { return x->offset < y->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const GgufTensorInfo& prev = *by_offset[i - 1];
      if (by_offset[i]->offset < prev.offset + prev.nbytes)
        fail(path(), ": tensors '", prev.name, "' and '", by_offset[i]->name, "' overlap");
    }
  }

  GgufFile& f_;
  ByteCursor in_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

std::shared_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::shared_ptr<GgufFile> f(new GgufFile());
  f->file_ = MappedFile(path);
  GgufReader(*f).read();
  return f;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

// ---- typed getters -------------------------------------------------------------------

namespace {
[[noreturn]] void wrong_type(const std::string& path, const std::string& key, const GgufValue& v,
                             std::string_view expected) {
  std::string got(type_name(v.type));
  if (v.type == GgufType::ARRAY) got += " of " + std::string(type_name(v.as_array().elem_type));
  fail(path, ": metadata key '", key, "' has type ", got, ", expected ", expected);
}
}  // namespace

std::optional<std::string> GgufFile::get_string_opt(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::STRING) wrong_type(path(), key, *v, "string");
  return v->as_string();
}

std::optional<int64_t> GgufFile::get_int_opt(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_int()) wrong_type(path(), key, *v, "integer");
  try {
    return v->as_int();
  } catch (const Error& e) {
    fail(path(), ": metadata key '", key, "': ", e.what());
  }
}

std::optional<double> GgufFile::get_float_opt(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_int() && !is_float(v->type)) wrong_type(path(), key, *v, "number");
  return v->as_float();
}

std::string GgufFile::get_string(const std::string& key) const {
  auto v = get_string_opt(key);
  if (!v) fail(path(), ": metadata key '", key, "' missing");
  return *v;
}

int64_t GgufFile::get_int(const std::string& key) const {
  auto v = get_int_opt(key);
  if (!v) fail(path(), ": metadata key '", key, "' missing");
  return *v;
}

double GgufFile::get_float(const std::string& key) const {
  auto v = get_float_opt(key);
  if (!v) fail(path(), ": metadata key '", key, "' missing");
  return *v;
}

bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) fail(path(), ": metadata key '", key, "' missing");
  if (v->type != GgufType::BOOL) wrong_type(path(), key, *v, "bool");
  return v->as_bool();
}

namespace {
const GgufArray& get_array(const GgufFile& f, const std::string& key, std::string_view expected,
                           bool (*elem_ok)(GgufType)) {
  const GgufValue* v = f.find(key);
  if (!v) fail(f.path(), ": metadata key '", key, "' missing");
  if (v->type != GgufType::ARRAY || !elem_ok(v->as_array().elem_type)) wrong_type(f.path(), key, *v, expected);
  return v->as_array();
}
}  // namespace

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  const GgufArray& a = get_array(*this, key, "array of string",
                                 [](GgufType t) { return t == GgufType::STRING; });
  std::vector<std::string> out;
  out.reserve(a.items.size());
  for (const GgufValue& v : a.items) out.push_back(v.as_string());
  return out;
}

std::vector<double> GgufFile::get_float_array(const std::string& key) const {
  const GgufArray& a = get_array(*this, key, "array of numbers", [](GgufType t) {
    return is_float(t) || is_signed_int(t) || is_unsigned_int(t);
  });
  std::vector<double> out;
  out.reserve(a.items.size());
  for (const GgufValue& v : a.items) out.push_back(v.as_float());
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  const GgufArray& a = get_array(*this, key, "array of integers",
                                 [](GgufType t) { return is_signed_int(t) || is_unsigned_int(t); });
  std::vector<int64_t> out;
  out.reserve(a.items.size());
  try {
    for (const GgufValue& v : a.items) out.push_back(v.as_int());
  } catch (const Error& e) {
    fail(path(), ": metadata key '", key, "': ", e.what());
  }
  return out;
}

}  // namespace triattn
