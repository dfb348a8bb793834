#pragma once
// Read-only memory map of a whole file (RAII). Model weights are used in place from it.
#include <cstddef>
#include <cstdint>
#include <string>

namespace triattn {

class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);  // throws Error naming the path
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops the whole pages of [p, p + n) that lie inside this mapping from the process's
  // memory (they fault back in from the file if read again). Ranges outside are ignored.
  void release(const void* p, size_t n) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace triattn
