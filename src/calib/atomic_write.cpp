#include "calib/atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace triattn {

namespace fs = std::filesystem;

namespace {

// Where the bytes finally go: a symlink's target, so the link keeps pointing at the new file.
fs::path final_target(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path t = fs::weakly_canonical(path, ec);
    if (!ec) return t;
  }
  return fs::path(path);
}

fs::path parent_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

// ".NAME.tmp-PID-N" beside the target: hidden, unique within this process and across processes.
fs::path temp_beside(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  return parent_of(target) / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                              std::to_string(counter++));
}

void sync_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) fail(p.string(), ": cannot reopen to flush: ", std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail(p.string(), ": flushing to disk failed: ", std::strerror(err));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  const fs::path target = final_target(path);
  std::error_code ec;
  const fs::file_status st = fs::status(target, ec);
  // rename() would replace a device node or FIFO (as root, /dev/null itself): never.
  if (fs::exists(st) && !fs::is_regular_file(st)) fail(path, ": exists and is not a regular file; refusing to replace it");
  const fs::path tmp = temp_beside(target);
  try {
    write(tmp.string());
    sync_file(tmp);
    fs::rename(tmp, target, ec);
    if (ec) fail("cannot move the finished file into place: ", ec.message());
  } catch (const Error& e) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    fail(path, ": writing failed (", e.what(), "); ", path, " was left as it was");
  } catch (...) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw;
  }
}

void write_bytes_atomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  write_file_atomically(path, [&](const std::string& tmp) {
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail("cannot create ", tmp, ": ", std::strerror(errno));
    const size_t n = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f);
    const bool ok = n == bytes.size() && std::fflush(f) == 0;
    const int err = errno;
    std::fclose(f);
    if (!ok) fail("cannot write ", tmp, ": ", std::strerror(err));
  });
}

void check_output_writable(const std::string& path, const std::string& what) {
  if (path.empty()) fail("the ", what, " path is empty");
  const fs::path target = final_target(path);
  std::error_code ec;
  const fs::file_status st = fs::status(target, ec);
  if (fs::is_directory(st))
    fail(path, ": is a directory; give the ", what, " a file name (a path inside it, for example)");
  if (fs::exists(st) && !fs::is_regular_file(st))
    fail(path, ": is not a regular file (a device or FIFO); the ", what, " must be a file");
  const fs::path dir = parent_of(target);
  const fs::file_status ds = fs::status(dir, ec);
  if (!fs::exists(ds)) fail(path, ": cannot write the ", what, ": folder ", dir.string(), " does not exist (create it first)");
  if (!fs::is_directory(ds)) fail(path, ": cannot write the ", what, ": ", dir.string(), " is not a directory");
  // Try it: permissions, read-only mounts and root all answer the same way.
  const fs::path probe = temp_beside(target);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) fail(path, ": cannot write the ", what, " in ", dir.string(), ": ", std::strerror(errno));
  ::close(fd);
  fs::remove(probe, ec);
  if (fs::exists(st) && ::access(target.c_str(), W_OK) != 0)
    fail(path, ": cannot overwrite the ", what, ": ", std::strerror(errno), " (the file is read-only)");
}

void prepare_output_dir(const std::string& dir, const std::string& first_file, const std::string& what) {
  namespace fs = std::filesystem;
  if (dir.empty()) fail("-o: give an output folder");
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    fail(dir, ": -o must be a folder for the ", what, ", and this is a file (choose a folder name)");
  fs::create_directories(dir, ec);
  if (ec) fail(dir, ": cannot create the output folder (", ec.message(), ")");
  check_output_writable((fs::path(dir) / first_file).string(), what);
}

}  // namespace triattn
