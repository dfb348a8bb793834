#pragma once
// The message of the triattn::Error a piece of code throws, for tests that check what an
// error names.
#include <functional>
#include <string>

#include "core/error.h"

namespace triattn::test {

// "" when f throws no triattn::Error (any other exception propagates).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const triattn::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace triattn::test
