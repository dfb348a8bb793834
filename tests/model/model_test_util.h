#pragma once
// What Model::load says about a file: its triattn::Error message, "" when it loads. Any other
// exception (bad_alloc, a JSON library error) escapes and fails the calling test: a load
// must never fail that way.
#include <string>

#include "core/error.h"
#include "model/model.h"

namespace triattn::test {

inline std::string load_error_of(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace triattn::test
