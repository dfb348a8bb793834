#include "calib/zip_writer.h"

#include <limits>
#include <span>

#include "calib/field_reader.h"
#include "calib/zip_reader.h"
#include "calib/zip_format.h"
#include "core/error.h"

namespace triattn {

namespace {

constexpr uint16_t kVersion = 20;  // 2.0: stored entries, folders

void check_fits(uint64_t v, const char* what) {
  if (v > std::numeric_limits<uint32_t>::max()) fail("zip archive too large (", what, " over 4 GiB)");
}

}  // namespace

void ZipWriter::add(const std::string& name, const std::vector<uint8_t>& data, size_t align) {
  if (name.size() > 0xFFFF) fail("zip entry name of ", name.size(), " bytes");
  check_fits(out_.size() + data.size() + 30 + name.size() + align, "entries");
  Entry e{name, crc32(std::span(data.data(), data.size())), static_cast<uint32_t>(data.size()),
          static_cast<uint32_t>(out_.size())};
  size_t pad = 0;
  if (align > 1) {
    const size_t start = out_.size() + 30 + name.size();
    pad = (align - (start + 4) % align) % align + 4;  // an extra field is at least its 4-byte header
  }
  ByteSink s;
  s.put<uint32_t>(zip::kLocalSig);
  s.put<uint16_t>(kVersion);
  s.put<uint16_t>(0);  // flags
  s.put<uint16_t>(0);  // stored
  s.put<uint16_t>(0);  // time
  s.put<uint16_t>(0x21);  // date: 1980-01-01
  s.put<uint32_t>(e.crc);
  s.put<uint32_t>(e.size);
  s.put<uint32_t>(e.size);
  s.put<uint16_t>(static_cast<uint16_t>(name.size()));
  s.put<uint16_t>(static_cast<uint16_t>(pad));
  s.put_bytes(name);
  if (pad) {
    s.put<uint16_t>(0xCAFE);  // a private extra field holding only padding
    s.put<uint16_t>(static_cast<uint16_t>(pad - 4));
    s.bytes.resize(s.bytes.size() + pad - 4, 0);
  }
  out_.insert(out_.end(), s.bytes.begin(), s.bytes.end());
  out_.insert(out_.end(), data.begin(), data.end());
  entries_.push_back(std::move(e));
}

std::vector<uint8_t> ZipWriter::finish() {
  if (entries_.size() > 0xFFFF) fail("zip archive of ", entries_.size(), " entries (at most 65535 without zip64)");
  const uint64_t cd_off = out_.size();
  ByteSink s;
  for (const Entry& e : entries_) {
    s.put<uint32_t>(zip::kCentralSig);
    s.put<uint16_t>(kVersion);  // made by
    s.put<uint16_t>(kVersion);  // needed
    s.put<uint16_t>(0);
    s.put<uint16_t>(0);
    s.put<uint16_t>(0);
    s.put<uint16_t>(0x21);
    s.put<uint32_t>(e.crc);
    s.put<uint32_t>(e.size);
    s.put<uint32_t>(e.size);
    s.put<uint16_t>(static_cast<uint16_t>(e.name.size()));
    s.put<uint16_t>(0);  // extra
    s.put<uint16_t>(0);  // comment
    s.put<uint16_t>(0);  // disk
    s.put<uint16_t>(0);  // internal attributes
    s.put<uint32_t>(0);  // external attributes
    s.put<uint32_t>(e.local_offset);
    s.put_bytes(e.name);
  }
  check_fits(cd_off + s.bytes.size(), "central directory");
  const uint32_t cd_size = static_cast<uint32_t>(s.bytes.size());
  s.put<uint32_t>(zip::kEndSig);
  s.put<uint16_t>(0);
  s.put<uint16_t>(0);
  s.put<uint16_t>(static_cast<uint16_t>(entries_.size()));
  s.put<uint16_t>(static_cast<uint16_t>(entries_.size()));
  s.put<uint32_t>(cd_size);
  s.put<uint32_t>(static_cast<uint32_t>(cd_off));
  s.put<uint16_t>(0);
  out_.insert(out_.end(), s.bytes.begin(), s.bytes.end());
  entries_.clear();
  std::vector<uint8_t> done = std::move(out_);
  out_.clear();
  return done;
}

}  // namespace triattn
