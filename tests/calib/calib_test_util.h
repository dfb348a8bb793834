#pragma once
// Helpers shared by the calib tests: temp paths and error-message capture.
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "core/error.h"

namespace calib_test {

inline std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("triattn_calib_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const triattn::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace calib_test
