// safetensors writer: JSON header (metadata + tensors in insertion order, contiguous data),
// padded with spaces to a multiple of 8 so the data section stays 8-byte aligned.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/file_out.h"
#include "formats/safetensors.h"
#include "formats/safetensors_dtype.h"

namespace triattn {

namespace {
uint64_t numel_of(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}
}  // namespace

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) {
  metadata_[key] = value;
}

void SafetensorsWriter::check_new_tensor(const std::string& name, DType type,
                                         const std::vector<int64_t>& shape) const {
  if (!safetensors_dtype_name(type))
    fail("safetensors tensor '", name, "': dtype ", dtype_name(type), " cannot be stored (F32, F16, BF16, I32 only)");
  if (name == "__metadata__") fail("safetensors tensor name '__metadata__' is reserved");
  for (int64_t d : shape)
    if (d <= 0) fail("safetensors tensor '", name, "': dimension ", d, " (must be positive)");
  for (const Tensor& t : tensors_)
    if (t.name == name) fail("safetensors tensor '", name, "' added twice");
}

void SafetensorsWriter::add(const std::string& name, DType type, const std::vector<int64_t>& shape,
                            const void* data, size_t nbytes) {
  check_new_tensor(name, type, shape);
  const uint64_t want = numel_of(shape) * row_bytes(type, 1);
  if (nbytes != want) fail("safetensors tensor '", name, "': ", nbytes, " bytes given, shape needs ", want);
  const auto* p = static_cast<const uint8_t*>(data);
  tensors_.push_back(Tensor{name, type, shape, std::vector<uint8_t>(p, p + nbytes), nullptr});
}

void SafetensorsWriter::add_rows(const std::string& name, DType type, const std::vector<int64_t>& shape,
                                 RowFiller fill) {
  check_new_tensor(name, type, shape);
  if (!fill) fail("safetensors tensor '", name, "': no row filler");
  tensors_.push_back(Tensor{name, type, shape, {}, std::move(fill)});
}

void SafetensorsWriter::write(const std::string& path) const {
  // ordered_json keeps insertion order, so the header lists tensors in data order.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata_) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t off = 0;
  for (const Tensor& t : tensors_) {
    const uint64_t n = numel_of(t.shape) * row_bytes(t.type, 1);
    header[t.name] = {{"dtype", safetensors_dtype_name(t.type)},
                      {"shape", t.shape},
                      {"data_offsets", {off, off + n}}};
    off += n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  FileOut out(path);
  out.put<uint64_t>(text.size());
  out.write(text.data(), text.size());
  std::vector<uint8_t> row;
  for (const Tensor& t : tensors_) {
    if (!t.fill) {
      out.write(t.bytes.data(), t.bytes.size());
      continue;
    }
    const int64_t cols = t.shape.empty() ? 1 : t.shape.back();
    const uint64_t numel = numel_of(t.shape);
    const int64_t rows = cols == 0 ? 0 : static_cast<int64_t>(numel / static_cast<uint64_t>(cols));
    row.assign(row_bytes(t.type, cols), 0);
    for (int64_t r = 0; r < rows; ++r) {
      t.fill(r, row.data());
      out.write(row.data(), row.size());
    }
  }
  out.close();
}

}  // namespace triattn
