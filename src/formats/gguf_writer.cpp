// GGUF v3 writer: header, metadata in insertion order, tensor infos, then each tensor's data
// at an aligned offset. It refuses anything the reader would refuse, so written files
// round-trip through GgufFile::open.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "formats/file_out.h"
#include "formats/gguf.h"
#include "formats/gguf_types.h"

namespace triattn {

using namespace gguf_detail;

namespace {

GgufValue make_uint(GgufType t, uint64_t v) { return GgufValue{t, v}; }
GgufValue make_int(GgufType t, int64_t v) { return GgufValue{t, v}; }

void put_string(FileOut& out, const std::string& s) {
  out.put<uint64_t>(s.size());
  out.write(s.data(), s.size());
}

void put_value(FileOut& out, const GgufValue& v) {
  switch (v.type) {
    case GgufType::UINT8: out.put(static_cast<uint8_t>(std::get<uint64_t>(v.value))); break;
    case GgufType::INT8: out.put(static_cast<int8_t>(std::get<int64_t>(v.value))); break;
    case GgufType::UINT16: out.put(static_cast<uint16_t>(std::get<uint64_t>(v.value))); break;
    case GgufType::INT16: out.put(static_cast<int16_t>(std::get<int64_t>(v.value))); break;
    case GgufType::UINT32: out.put(static_cast<uint32_t>(std::get<uint64_t>(v.value))); break;
    case GgufType::INT32: out.put(static_cast<int32_t>(std::get<int64_t>(v.value))); break;
    case GgufType::UINT64: out.put(std::get<uint64_t>(v.value)); break;
    case GgufType::INT64: out.put(std::get<int64_t>(v.value)); break;
    case GgufType::FLOAT32: out.put(static_cast<float>(std::get<double>(v.value))); break;
    case GgufType::FLOAT64: out.put(std::get<double>(v.value)); break;
    case GgufType::BOOL: out.put(static_cast<uint8_t>(std::get<bool>(v.value) ? 1 : 0)); break;
    case GgufType::STRING: put_string(out, std::get<std::string>(v.value)); break;
    case GgufType::ARRAY: {
      const GgufArray& a = std::get<GgufArray>(v.value);
      out.put(static_cast<uint32_t>(a.elem_type));
      out.put<uint64_t>(a.items.size());
      for (const GgufValue& item : a.items) put_value(out, item);
      break;
    }
  }
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

uint64_t tensor_nbytes(DType type, const std::vector<int64_t>& shape) {
  if (shape.empty()) return row_bytes(type, 1);
  uint64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= static_cast<uint64_t>(shape[d]);
  return row_bytes(type, shape.back()) * rows;
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue v) {
  check_value(v, "GGUF metadata '" + key + "'");
  for (auto& [k, old] : kv_) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  kv_.emplace_back(key, std::move(v));
}

void GgufWriter::set_string(const std::string& key, const std::string& v) {
  set(key, GgufValue{GgufType::STRING, v});
}
void GgufWriter::set_u32(const std::string& key, uint32_t v) { set(key, make_uint(GgufType::UINT32, v)); }
void GgufWriter::set_i32(const std::string& key, int32_t v) { set(key, make_int(GgufType::INT32, v)); }
void GgufWriter::set_f32(const std::string& key, float v) {
  set(key, GgufValue{GgufType::FLOAT32, static_cast<double>(v)});
}
void GgufWriter::set_bool(const std::string& key, bool v) { set(key, GgufValue{GgufType::BOOL, v}); }

void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  GgufArray a{GgufType::STRING, {}};
  a.items.reserve(v.size());
  for (const std::string& s : v) a.items.push_back(GgufValue{GgufType::STRING, s});
  set(key, GgufValue{GgufType::ARRAY, std::move(a)});
}
void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  GgufArray a{GgufType::FLOAT32, {}};
  a.items.reserve(v.size());
  for (float x : v) a.items.push_back(GgufValue{GgufType::FLOAT32, static_cast<double>(x)});
  set(key, GgufValue{GgufType::ARRAY, std::move(a)});
}
void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  GgufArray a{GgufType::INT32, {}};
  a.items.reserve(v.size());
  for (int32_t x : v) a.items.push_back(make_int(GgufType::INT32, x));
  set(key, GgufValue{GgufType::ARRAY, std::move(a)});
}

void GgufWriter::check_new_tensor(const std::string& name, DType type,
                                  const std::vector<int64_t>& shape) const {
  if (shape.size() > 4) fail("GGUF tensor '", name, "': ", shape.size(), " dims (at most 4)");
  for (int64_t d : shape)
    if (d <= 0) fail("GGUF tensor '", name, "': dimension ", d, " (must be positive)");
  if (!shape.empty() && shape.back() % block_size(type) != 0)
    fail("GGUF tensor '", name, "': row of ", shape.back(), " elements is not a multiple of the ",
         dtype_name(type), " block size ", block_size(type));
  for (const Tensor& t : tensors_)
    if (t.name == name) fail("GGUF tensor '", name, "' added twice");
}

void GgufWriter::add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape,
                            const void* data, size_t nbytes) {
  check_new_tensor(name, type, shape);
  if (nbytes != tensor_nbytes(type, shape))
    fail("GGUF tensor '", name, "': ", nbytes, " bytes given, shape needs ", tensor_nbytes(type, shape));
  const auto* p = static_cast<const uint8_t*>(data);
  tensors_.push_back(Tensor{name, type, shape, std::vector<uint8_t>(p, p + nbytes), nullptr});
}

void GgufWriter::add_tensor_rows(const std::string& name, DType type,
                                 const std::vector<int64_t>& shape, RowFiller fill) {
  check_new_tensor(name, type, shape);
  if (!fill) fail("GGUF tensor '", name, "': no row filler");
  tensors_.push_back(Tensor{name, type, shape, {}, std::move(fill)});
}

void GgufWriter::write(const std::string& path, uint64_t alignment) const {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    fail(path, ": GGUF alignment ", alignment, " is not a power of two");
  std::vector<std::pair<std::string, GgufValue>> kv = kv_;
  auto al = std::find_if(kv.begin(), kv.end(), [](const auto& p) { return p.first == "general.alignment"; });
  if (al != kv.end()) {
    if (al->second.type != GgufType::UINT32 || std::get<uint64_t>(al->second.value) != alignment)
      fail(path, ": general.alignment set to a value other than the write alignment ", alignment);
  } else if (alignment != kDefaultAlignment) {
    kv.emplace_back("general.alignment", make_uint(GgufType::UINT32, alignment));
  }

  std::vector<uint64_t> offsets;
  uint64_t off = 0;
  for (const Tensor& t : tensors_) {
    offsets.push_back(off);
    off = align_up(off + tensor_nbytes(t.type, t.shape), alignment);
  }

  FileOut out(path);
  out.put(kMagic);
  out.put<uint32_t>(3);
  out.put<uint64_t>(tensors_.size());
  out.put<uint64_t>(kv.size());
  for (const auto& [key, v] : kv) {
    put_string(out, key);
    out.put(static_cast<uint32_t>(v.type));
    put_value(out, v);
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    put_string(out, t.name);
    out.put<uint32_t>(t.shape.size());
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) out.put<uint64_t>(*it);  // ne[] innermost first
    out.put(dtype_to_ggml(t.type));
    out.put<uint64_t>(offsets[i]);
  }
  out.zeros(align_up(out.pos(), alignment) - out.pos());

  const uint64_t data_start = out.pos();
  std::vector<uint8_t> row;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    out.zeros(data_start + offsets[i] - out.pos());
    if (!t.fill) {
      out.write(t.bytes.data(), t.bytes.size());
      continue;
    }
    const int64_t cols = t.shape.empty() ? 1 : t.shape.back();
    const int64_t rows = cols == 0 ? 0 : static_cast<int64_t>(tensor_nbytes(t.type, t.shape) / row_bytes(t.type, cols));
    row.assign(row_bytes(t.type, cols), 0);
    for (int64_t r = 0; r < rows; ++r) {
      t.fill(r, row.data());
      out.write(row.data(), row.size());
    }
  }
  out.close();
}

}  // namespace triattn
