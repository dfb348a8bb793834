#pragma once
// The real chat templates in ../shared/chat-templates, for the tests that render them all.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/read_file.h"

namespace triattn::test {

// Every *.jinja file, sorted; none found fails the caller's expectations, not silently.
inline std::vector<std::filesystem::path> template_files() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(TRIATTN_SHARED_DIR) + "/chat-templates"))
    if (e.path().extension() == ".jinja") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string slurp(const std::filesystem::path& p) { return read_file(p.string()); }

}  // namespace triattn::test
