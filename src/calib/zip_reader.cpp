#include "calib/zip_reader.h"

#include <array>
#include <cstring>

#include "calib/zip_format.h"
#include "core/error.h"

namespace triattn {

namespace {

// Little-endian field reads with bounds checks against the whole file.
struct Reader {
  const uint8_t* base;
  size_t size;
  const std::string& path;
  void need(uint64_t off, uint64_t n, const char* what) const {
    if (off > size || n > size - off) fail(path, ": truncated zip archive (", what, " at offset ", off, ")");
  }
  uint16_t u16(uint64_t off) const {
    need(off, 2, "field");
    return static_cast<uint16_t>(base[off] | base[off + 1] << 8);
  }
  uint32_t u32(uint64_t off) const {
    need(off, 4, "field");
    uint32_t v;
    std::memcpy(&v, base + off, 4);
    return v;
  }
  uint64_t u64(uint64_t off) const {
    need(off, 8, "field");
    uint64_t v;
    std::memcpy(&v, base + off, 8);
    return v;
  }
};

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> t = [] {
    std::array<uint32_t, 256> a{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      a[i] = c;
    }
    return a;
  }();
  return t;
}

}  // namespace

uint32_t crc32(std::span<const uint8_t> data) {
  const auto& t = crc_table();
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : data) c = t[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

ZipArchive::ZipArchive(const std::string& path) : file_(path) {
  const Reader r{file_.data(), file_.size(), file_.path()};
  if (file_.size() < 22 || r.u32(0) != zip::kLocalSig) fail(path, ": not a zip archive");
  // The end-of-central-directory record sits in the last 22 + 65535 (comment) bytes.
  uint64_t eocd = UINT64_MAX;
  const uint64_t lo = file_.size() > 22 + 65535 ? file_.size() - 22 - 65535 : 0;
  for (uint64_t off = file_.size() - 22 + 1; off-- > lo;)
    if (r.u32(off) == zip::kEndSig && off + 22 + r.u16(off + 20) == file_.size()) {
      eocd = off;
      break;
    }
  if (eocd == UINT64_MAX) fail(path, ": zip end-of-central-directory record not found (truncated file?)");
  if (r.u16(eocd + 4) != 0 || r.u16(eocd + 6) != 0) fail(path, ": multi-disk zip archives are not supported");
  uint64_t count = r.u16(eocd + 10);
  uint64_t cd_size = r.u32(eocd + 12), cd_off = r.u32(eocd + 16);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) {
    // Zip64: the locator precedes the classic record and points at the 64-bit record.
    if (eocd < 20 || r.u32(eocd - 20) != zip::kZip64LocatorSig) fail(path, ": zip64 locator missing");
    const uint64_t z = r.u64(eocd - 20 + 8);
    if (r.u32(z) != zip::kZip64EndSig) fail(path, ": zip64 end record missing");
    count = r.u64(z + 32);
    cd_size = r.u64(z + 40);
    cd_off = r.u64(z + 48);
  }
  r.need(cd_off, cd_size, "central directory");
  uint64_t off = cd_off;
  for (uint64_t i = 0; i < count; ++i) {
    if (r.u32(off) != zip::kCentralSig) fail(path, ": bad zip central directory entry ", i);
    Entry e;
    e.flags = r.u16(off + 8);
    e.method = r.u16(off + 10);
    e.crc = r.u32(off + 16);
    e.comp_size = r.u32(off + 20);
    e.size = r.u32(off + 24);
    const uint16_t name_len = r.u16(off + 28), extra_len = r.u16(off + 30), comment_len = r.u16(off + 32);
    e.local_offset = r.u32(off + 42);
    r.need(off + 46, name_len, "entry name");
    e.name.assign(reinterpret_cast<const char*>(file_.data() + off + 46), name_len);
    // Zip64 extended information replaces the fields that are saturated, in this order.
    uint64_t x = off + 46 + name_len;
    const uint64_t x_end = x + extra_len;
    while (x + 4 <= x_end) {
      const uint16_t id = r.u16(x), len = r.u16(x + 2);
      if (id == 0x0001) {
        uint64_t p = x + 4;
        if (e.size == 0xFFFFFFFFu) e.size = r.u64(p), p += 8;
        if (e.comp_size == 0xFFFFFFFFu) e.comp_size = r.u64(p), p += 8;
        if (e.local_offset == 0xFFFFFFFFu) e.local_offset = r.u64(p), p += 8;
      }
      x += 4 + len;
    }
    entries_.push_back(std::move(e));
    off += 46 + name_len + extra_len + comment_len;
  }
}

std::vector<std::string> ZipArchive::names() const {
  std::vector<std::string> n;
  for (const Entry& e : entries_) n.push_back(e.name);
  return n;
}

const ZipArchive::Entry* ZipArchive::find(const std::string& name) const {
  for (const Entry& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::span<const uint8_t> ZipArchive::read(const std::string& name) const {
  const Entry* e = find(name);
  if (!e) fail(path(), ": zip entry '", name, "' not found");
  if (e->flags & 1) fail(path(), ": zip entry '", name, "' is encrypted");
  if (e->method != 0)
    fail(path(), ": zip entry '", name, "' is compressed (method ", e->method,
         "); only stored entries are supported, as torch.save writes them");
  if (e->comp_size != e->size) fail(path(), ": zip entry '", name, "' has inconsistent sizes");
  const Reader r{file_.data(), file_.size(), file_.path()};
  if (r.u32(e->local_offset) != zip::kLocalSig) fail(path(), ": zip entry '", name, "' has no local header");
  const uint64_t data = e->local_offset + 30 + r.u16(e->local_offset + 26) + r.u16(e->local_offset + 28);
  r.need(data, e->size, "entry data");
  std::span<const uint8_t> bytes(file_.data() + data, e->size);
  if (crc32(bytes) != e->crc) fail(path(), ": zip entry '", name, "' fails its CRC-32 check (corrupt file)");
  return bytes;
}

}  // namespace triattn
