#pragma once
// A zip archive of stored (uncompressed) entries, built in memory: what np.savez and
// torch.save write, and what calib/zip_reader.h reads back. Entries and the whole archive stay
// under 4 GiB (no zip64): statistics are kilobytes.
#include <cstdint>
#include <string>
#include <vector>

namespace triattn {

class ZipWriter {
 public:
  // `align`: pad the local header's extra field so the entry's data starts at a multiple of it
  // (torch aligns storages to 64 bytes); 1 = no padding.
  void add(const std::string& name, const std::vector<uint8_t>& data, size_t align = 1);
  std::vector<uint8_t> finish();  // appends the central directory; the writer is then empty

 private:
  struct Entry {
    std::string name;
    uint32_t crc = 0, size = 0, local_offset = 0;
  };
  std::vector<uint8_t> out_;
  std::vector<Entry> entries_;
};

}  // namespace triattn
