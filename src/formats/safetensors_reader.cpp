// safetensors reader: u64 header length, a JSON header, then the data section. Tensors are
// used in place from the mapping after every offset and size has been checked.
#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "formats/byte_cursor.h"
#include "formats/safetensors.h"
#include "formats/safetensors_dtype.h"

namespace triattn {

namespace {
// The format's own limit; anything larger is a corrupted length, not a real header.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

uint64_t json_uint(const nlohmann::json& j, const std::string& path, const std::string& what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
    fail(path, ": ", what, " must be a non-negative integer, got ", j.dump().substr(0, 60));
  return j.get<uint64_t>();
}
}  // namespace

class SafetensorsReader {
 public:
  explicit SafetensorsReader(SafetensorsFile& f) : f_(f) {}

  void read() {
    const std::string& path = f_.file_.path();
    ByteCursor in(f_.file_.data(), f_.file_.size(), path);
    const uint64_t header_len = in.read<uint64_t>("header length");
    if (header_len > kMaxHeaderBytes || header_len > in.remaining())
      fail(path, ": header length ", header_len, " is larger than the file allows");
    const auto* hdr = reinterpret_cast<const char*>(f_.file_.data() + 8);
    const uint64_t data_start = 8 + header_len;
    const uint64_t data_size = f_.file_.size() - data_start;

    // nlohmann keeps the last of duplicate keys silently; a callback sees each top-level key.
    std::set<std::string> seen;
    std::string duplicate;
    nlohmann::json header;
    try {
      header = nlohmann::json::parse(
          hdr, hdr + header_len,
          [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
            if (depth == 1 && ev == nlohmann::json::parse_event_t::key &&
                !seen.insert(parsed.get<std::string>()).second && duplicate.empty())
              duplicate = parsed.get<std::string>();
            return true;
          });
    } catch (const nlohmann::json::exception& e) {
      fail(path, ": header is not valid JSON: ", e.what());
    }
    if (!duplicate.empty()) fail(path, ": header names '", duplicate, "' twice");
    if (!header.is_object()) fail(path, ": header is not a JSON object");

    for (auto it = header.begin(); it != header.end(); ++it) {
      const std::string& name = it.key();
      if (name == "__metadata__") {
        read_metadata(it.value(), path);
        continue;
      }
      const nlohmann::json& e = it.value();
      const std::string where = "tensor '" + name + "'";
      if (!e.is_object()) fail(path, ": ", where, " is not a JSON object");
      if (!e.contains("dtype") || !e["dtype"].is_string()) fail(path, ": ", where, " has no dtype string");
      if (!e.contains("shape") || !e["shape"].is_array()) fail(path, ": ", where, " has no shape array");
      if (!e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
        fail(path, ": ", where, " has no data_offsets [begin, end]");

      SafetensorsTensor t;
      t.name = name;
      const std::string dtype = e["dtype"].get<std::string>();
      const auto dt = safetensors_dtype(dtype);
      if (!dt) fail(path, ": ", where, " has unsupported dtype ", dtype, " (supported: F32, F16, BF16, I32, U8)");
      t.type = *dt;
      uint64_t numel = 1;
      for (const auto& d : e["shape"]) {
        const uint64_t n = json_uint(d, path, where + " shape entry");
        if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          fail(path, ": ", where, " has an absurd shape");
        t.shape.push_back(static_cast<int64_t>(n));
      }
      // Empty dims are refused (no checkpoint needs them, and TensorView divides by the row
      // length); every partial product must fit in int64 (TensorView multiplies them).
      uint64_t partial = 1;
      for (int64_t n : t.shape)
        if (n == 0) fail(path, ": ", where, " has an empty dimension");
      for (int64_t n : t.shape)
        if (__builtin_mul_overflow(partial, static_cast<uint64_t>(n), &partial) ||
            partial > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          fail(path, ": ", where, " has an absurd shape");
      for (int64_t n : t.shape) numel *= static_cast<uint64_t>(n);
      const uint64_t begin = json_uint(e["data_offsets"][0], path, where + " data_offsets");
      const uint64_t end = json_uint(e["data_offsets"][1], path, where + " data_offsets");
      if (begin > end || end > data_size)
        fail(path, ": ", where, " data_offsets [", begin, ", ", end, "] lie outside the data section (",
             data_size, " bytes)");
      const uint64_t want = checked_mul(numel, row_bytes(t.type, 1), path + ": " + where);
      if (end - begin != want)
        fail(path, ": ", where, " holds ", end - begin, " bytes but its dtype and shape need ", want);
      t.data = f_.file_.data() + data_start + begin;
      t.nbytes = static_cast<size_t>(want);
      f_.tensors_.push_back(std::move(t));
    }

    // File order.
    std::stable_sort(f_.tensors_.begin(), f_.tensors_.end(),
                     [](const SafetensorsTensor& a, const SafetensorsTensor& b) { return a.data < b.data; });
    const uint8_t* prev_end = nullptr;
    const std::string* prev_name = nullptr;
    for (const SafetensorsTensor& t : f_.tensors_) {
      const auto* b = static_cast<const uint8_t*>(t.data);
      if (prev_end && b < prev_end) fail(path, ": tensors '", *prev_name, "' and '", t.name, "' overlap");
      prev_end = b + t.nbytes;
      prev_name = &t.name;
    }
    for (size_t i = 0; i < f_.tensors_.size(); ++i) f_.index_.emplace(f_.tensors_[i].name, i);
  }

 private:
  void read_metadata(const nlohmann::json& m, const std::string& path) {
    if (!m.is_object()) fail(path, ": __metadata__ is not a JSON object");
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it.value().is_string()) fail(path, ": __metadata__ value for '", it.key(), "' is not a string");
      f_.metadata_[it.key()] = it.value().get<std::string>();
    }
  }

  SafetensorsFile& f_;
};

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->file_ = MappedFile(path);
  SafetensorsReader(*f).read();
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace triattn
