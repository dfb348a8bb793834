#pragma once
// Sequential binary file output with every write checked (a full disk must not leave a
// silently truncated model behind). Internal to formats/.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.h"

namespace triattn {

class FileOut {
 public:
  explicit FileOut(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) fail(path, ": cannot create: ", std::strerror(errno));
  }
  ~FileOut() {
    if (f_) std::fclose(f_);
  }
  FileOut(const FileOut&) = delete;
  FileOut& operator=(const FileOut&) = delete;

  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail(path_, ": write failed: ", std::strerror(errno));
    pos_ += n;
  }
  template <class T>
  void put(const T& v) {
    write(&v, sizeof(T));
  }
  void zeros(size_t n) {
    static const char z[64] = {};
    while (n) {
      const size_t k = n < sizeof(z) ? n : sizeof(z);
      write(z, k);
      n -= k;
    }
  }
  uint64_t pos() const { return pos_; }
  void close() {
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) fail(path_, ": close failed: ", std::strerror(errno));
  }

 private:
  std::string path_;
  std::FILE* f_;
  uint64_t pos_ = 0;
};

}  // namespace triattn
