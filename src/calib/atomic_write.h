#pragma once
// Writing an output file so that a failure (full disk, a throw half way) never leaves a
// truncated file under the final name, nor destroys the file that was there before: the
// bytes go to a temporary file in the same directory, which is flushed to disk and then
// renamed over the target (rename is atomic within one file system).
#include <functional>
#include <cstdint>
#include <string>
#include <vector>

namespace triattn {

// Calls write(temp_path), which must create and fill temp_path (and throw on any error);
// then renames it to `path`. A symlink at `path` is followed: its target is replaced. On any
// error the temporary file is removed and the Error names `path`.
void write_file_atomically(const std::string& path, const std::function<void(const std::string& temp_path)>& write);
// The same for a file whose whole content is already in memory.
void write_bytes_atomically(const std::string& path, const std::vector<uint8_t>& bytes);

// Throws Error naming `path` and `what` ("stats file", "token list") unless a file can be
// created there: the parent directory exists, is a directory and accepts a new file (tried
// for real, so read-only mounts and permissions are caught whoever runs), and `path` itself
// is not a directory or a non-regular file. For checks before a long run.
void check_output_writable(const std::string& path, const std::string& what);

// Before a long run that writes its files into the folder `dir` (-o): creates it and its
// parents if missing and checks that its first file, `first_file`, can be written there
// (check_output_writable). Error naming the folder when it is empty, a file, or cannot be made.
void prepare_output_dir(const std::string& dir, const std::string& first_file, const std::string& what);

}  // namespace triattn
