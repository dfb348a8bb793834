// Output files of calibration: written atomically (a failure leaves the old file, never a
// truncated one, and no temporary behind), and checked for writability before a long run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "calib/atomic_write.h"
#include "calib_test_util.h"
#include "common/shared_files.h"
#include "common/temp_dir.h"

using namespace triattn;
using triattn::test::error_of;
namespace fs = std::filesystem;

namespace {

using test::slurp;
size_t entries(const fs::path& dir) {
  size_t n = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator(); ++it) ++n;
  return n;
}

}  // namespace

TEST(AtomicWrite, AFailureHalfWayLeavesTheOldFileAndNoTemporary) {
  test::TempDir dir;
  const std::string out = dir.write("stats.safetensors", "the previous statistics");
  const std::string msg = error_of([&] {
    write_file_atomically(out, [](const std::string& tmp) {
      std::ofstream(tmp) << "half of the new";
      fail(tmp, ": write failed: No space left on device");
    });
  });
  EXPECT_NE(msg.find(out + ": writing failed ("), std::string::npos) << msg;
  EXPECT_NE(msg.find("No space left on device"), std::string::npos) << msg;
  EXPECT_NE(msg.find(out + " was left as it was"), std::string::npos) << msg;
  EXPECT_EQ(slurp(out), "the previous statistics");
  EXPECT_EQ(entries(dir.path()), 1u);  // no temporary left

  write_file_atomically(out, [](const std::string& tmp) { std::ofstream(tmp) << "new"; });
  EXPECT_EQ(slurp(out), "new");
  EXPECT_EQ(entries(dir.path()), 1u);
}

TEST(AtomicWrite, ASymlinkKeepsPointingAtTheNewFile) {
  test::TempDir dir;
  const std::string real = dir.write("real.safetensors", "old");
  const std::string link = dir.file("link.safetensors");
  fs::create_symlink(real, link);
  write_file_atomically(link, [](const std::string& tmp) { std::ofstream(tmp) << "new"; });
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(real), "new");
}

TEST(AtomicWrite, NonRegularTargetsAreNeverReplaced) {
  // As root, rename() over /dev/null would replace the device node itself.
  const std::string msg = error_of([] { write_file_atomically("/dev/null", [](const std::string&) {}); });
  EXPECT_NE(msg.find("/dev/null: exists and is not a regular file"), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST(OutputWritable, MissingFolderFileAsFolderDirectoryAndUnwritablePlaces) {
  test::TempDir dir;
  std::string msg = error_of([&] { check_output_writable(dir.file("no/such/dir/x.safetensors"), "stats file"); });
  EXPECT_NE(msg.find("cannot write the stats file: folder " + dir.file("no/such/dir") + " does not exist"),
            std::string::npos)
      << msg;
  const std::string file = dir.write("plain.txt", "x");
  msg = error_of([&] { check_output_writable(file + "/x.safetensors", "stats file"); });
  EXPECT_NE(msg.find(file + " is not a directory"), std::string::npos) << msg;
  msg = error_of([&] { check_output_writable(dir.path().string(), "stats file"); });
  EXPECT_NE(msg.find("is a directory; give the stats file a file name"), std::string::npos) << msg;
  // /proc takes no new files, even from root: the check really tries to create one.
  msg = error_of([&] { check_output_writable("/proc/triattn-test.safetensors", "stats file"); });
  EXPECT_NE(msg.find("/proc/triattn-test.safetensors: cannot write the stats file in /proc"), std::string::npos) << msg;
  msg = error_of([&] { check_output_writable("/dev/null", "token list"); });
  EXPECT_NE(msg.find("is not a regular file"), std::string::npos) << msg;
  EXPECT_NO_THROW(check_output_writable(dir.file("fine.safetensors"), "stats file"));
  EXPECT_NO_THROW(check_output_writable(file, "stats file"));  // overwriting a file is fine
  EXPECT_EQ(entries(dir.path()), 1u);                           // the probe is gone
  EXPECT_FALSE(fs::exists(dir.file("fine.safetensors")));
}
