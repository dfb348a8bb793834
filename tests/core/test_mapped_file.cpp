// MappedFile: whole-file read-only maps, clear errors, and release() handing pages back to the
// OS without changing what the mapping reads.
#include "core/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "core/error.h"

namespace triattn {
namespace {

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 4096) & 0xFF);
  return s;
}

// Resident pages of this process (second field of /proc/self/statm; 0 without /proc).
long resident_pages() {
  std::ifstream in("/proc/self/statm");
  long size = 0, resident = 0;
  in >> size >> resident;
  return resident;
}

TEST(MappedFile, MapsTheWholeFileAndNamesBadPaths) {
  test::TempDir dir;
  const std::string data = pattern(10000);
  const MappedFile f(dir.write("a.bin", data));
  ASSERT_EQ(f.size(), data.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data()), f.size()), data);
  try {
    MappedFile missing(dir.file("missing.bin"));
    FAIL() << "opened a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.bin"), std::string::npos);
  }
}

TEST(MappedFile, ReleasedPagesReadTheSameAndLeaveTheProcess) {
  test::TempDir dir;
  const size_t n = size_t(16) << 20;
  const std::string data = pattern(n);
  const MappedFile f(dir.write("big.bin", data));
  long sum = 0;
  for (size_t i = 0; i < n; i += 4096) sum += f.data()[i];  // fault every page in
  const long before = resident_pages();

  f.release(f.data() + 1, n - 2);        // not page aligned: whole pages inside only
  f.release(f.data() + n - 10, 100);     // runs past the end: ignored
  f.release(data.data(), 4096);          // not this mapping: ignored
#if defined(__linux__)
  const long page = ::sysconf(_SC_PAGESIZE);
  EXPECT_LT(resident_pages(), before - static_cast<long>(n / 2) / page) << "pages were not released";
#else
  (void)before;
#endif
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data()), n), data);  // faults back from the file
  EXPECT_GT(sum, 0);
}

}  // namespace
}  // namespace triattn
