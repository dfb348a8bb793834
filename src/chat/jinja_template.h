#pragma once
// A parsed Jinja template: parse once, render many times with different variables.
#include <cstdint>
#include <memory>
#include <string>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_value.h"

namespace triattn::jinja {

class Template {
 public:
  // Throws Error("chat template line N: ...") on a syntax error.
  explicit Template(const std::string& source, const LexOptions& opt = {});

  // Renders with `vars` as the template's variables (on top of Jinja's own globals: range,
  // namespace, dict). Throws Error naming the template line on a runtime failure or when the
  // render goes over one of the limits of jinja_limits.h, and TemplateRaised when the
  // template calls a raise_exception it was given. `steps_used`, when given, receives the
  // steps the render took (for measuring templates against kMaxSteps).
  std::string render(const ValueDict& vars, int64_t* steps_used = nullptr) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace triattn::jinja
