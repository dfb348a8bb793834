#pragma once
// One exception type for every user-facing failure (bad file, bad flag, bad request).
// Messages name the problem and the thing that has it, e.g. "model.gguf: tensor 'x' ...".
#include <sstream>
#include <stdexcept>
#include <string>

namespace triattn {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// fail("tensor ", name, " has ", n, " dims") builds the message with operator<<.
template <class... Args>
[[noreturn]] void fail(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  throw Error(os.str());
}

}  // namespace triattn
