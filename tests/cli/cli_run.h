#pragma once
// Runs the triattn binary the way a user would (through the shell, stdin from a file) and
// captures exit code, stdout and stderr; plus a scratch directory removed after the test.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/shared_files.h"
#include "common/temp_dir.h"

namespace triattn::test {

// Single-quoted for sh: safe for any byte but NUL.
inline std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

using ScratchDir = TempDir;  // common/temp_dir.h

struct RunResult {
  int rc = -1;
  std::string out, err;
};

// triattn <args...>, stdin from `input` (empty: /dev/null). Arguments are quoted here.
// stdout_to: where stdout goes instead of being captured (e.g. /dev/full). Every run is
// bounded by `timeout` (rc 124 when it had to stop it), so a hang fails the test instead
// of stalling the suite.
inline RunResult run_triattn(const std::vector<std::string>& args, const std::string& input = "",
                             const std::string& stdout_to = "") {
  ScratchDir io;
  const auto in = io / "stdin", out = io / "stdout", err = io / "stderr";
  write_file(in, input);
  std::string cmd = "timeout -k 5 120 " + sh_quote(TRIATTN_BINARY);
  for (const std::string& a : args) cmd += " " + sh_quote(a);
  cmd += " < " + sh_quote(in.string()) + " > " + sh_quote(stdout_to.empty() ? out.string() : stdout_to) + " 2> " +
         sh_quote(err.string());
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (stdout_to.empty()) r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// A copy of a (read-only) shared model directory that a test may add files to.
inline void copy_dir_files(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::filesystem::create_directories(to);
  for (const auto& e : std::filesystem::directory_iterator(from)) {
    if (!e.is_regular_file()) continue;
    const auto dst = to / e.path().filename();
    std::filesystem::copy_file(e.path(), dst, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(dst, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
  }
}

}  // namespace triattn::test
