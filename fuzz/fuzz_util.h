#pragma once
// Shared pieces of the libFuzzer targets (docs/reliability.md): the loaders take paths, so
// each input is written to a file in a per-process scratch directory and opened from there.
// A target may end in triattn::Error (a named refusal, what bad input must give) or succeed;
// any other exception escaping is a finding (abort, so libFuzzer records the input), as are
// sanitizer reports, leaks and timeouts.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace triattn::fuzz {

// Separates the parts of a multi-file input (config.json | safetensors, vocab.json |
// merges.txt, template | messages). The seeds contain it and fuzz/*.dict lists it.
inline constexpr std::string_view kSep = "\n#--8<--#\n";

inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/triattn-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) std::abort();
    return tmpl;
  }();
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}

inline std::string write_file(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}
inline std::string write_file(const std::string& name, std::string_view s) {
  return write_file(name, reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// The input cut at each kSep, into at most `n` parts (the last keeps any further separators).
inline std::vector<std::string_view> split(const uint8_t* data, size_t size, size_t n) {
  std::string_view s(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < n) {
    const size_t at = s.find(kSep);
    if (at == std::string_view::npos) break;
    parts.push_back(s.substr(0, at));
    s.remove_prefix(at + kSep.size());
  }
  parts.push_back(s);
  while (parts.size() < n) parts.emplace_back();
  return parts;
}

// Runs f; a triattn::Error is the expected outcome for bad input. Anything else escaping is
// reported and aborts. TRIATTN_FUZZ_VERBOSE=1 prints the errors (to see what inputs reach).
template <class F>
void expect_named_errors(F&& f) {
  static const bool verbose = std::getenv("TRIATTN_FUZZ_VERBOSE") != nullptr;
  try {
    f();
  } catch (const Error& e) {
    if (verbose) std::fprintf(stderr, "error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: exception other than triattn::Error escaped: %s\n", e.what());
    std::abort();
  }
}

}  // namespace triattn::fuzz
