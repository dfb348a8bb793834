#pragma once
// The work meter of one render: every node, statement, loop iteration and byte built is
// charged here, and the render fails with a clear Error once kMaxSteps is spent. Who charges
// what: the interpreter charges nodes, statements, iterations, macro calls and output; each
// builtin entry point (filters, tests, methods, operators) charges the strings it reads and
// the value it returns; builtins that loop over items charge each item and pass the budget
// to what they call per item. Sizes are checked separately, before allocation
// (jinja_limits.h).
#include <cstdint>

#include "chat/jinja_limits.h"
#include "chat/jinja_value.h"

namespace triattn::jinja {

class Budget {
 public:
  void step(int64_t n = 1) {
    steps_ += n;
    if (steps_ > kMaxSteps) exhausted();
  }
  // Building, copying or scanning n bytes.
  void bytes(size_t n) { step(static_cast<int64_t>(n / kBytesPerStep)); }
  // A builtin reads v: scanning a string costs its length (containers are charged by the
  // loops that walk them).
  void read(const Value& v) {
    if (v.is_string()) bytes(v.str_ref().size());
  }
  // v was just built: its own storage (string bytes, list items, dict entries; the values
  // it shares with others were charged when they were built).
  void built(const Value& v);

  int64_t steps() const { return steps_; }

 private:
  [[noreturn]] static void exhausted();
  int64_t steps_ = 0;
};

}  // namespace triattn::jinja
