#pragma once
// Minimal read-only ZIP archive, enough for torch.save files (the official
// TriAttention stats are a torch zip). torch writes every entry "stored" (no compression),
// so only stored entries are read; anything else (deflate, encryption, split archives) is
// refused with an Error naming the archive and the entry. CRC-32 is verified.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"

namespace triattn {

class ZipArchive {
 public:
  explicit ZipArchive(const std::string& path);
  const std::string& path() const { return file_.path(); }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  // The bytes of a stored entry (a view into the mapped file, valid while this lives).
  std::span<const uint8_t> read(const std::string& name) const;

 private:
  struct Entry {
    std::string name;
    uint16_t method = 0, flags = 0;
    uint32_t crc = 0;
    uint64_t comp_size = 0, size = 0, local_offset = 0;
  };
  const Entry* find(const std::string& name) const;
  MappedFile file_;
  std::vector<Entry> entries_;
};

uint32_t crc32(std::span<const uint8_t> data);

}  // namespace triattn
