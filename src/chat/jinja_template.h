#pragma once
// A parsed Jinja template: parse once, render many times with different variables.
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
  // namespace, dict). Throws Error naming the template line on a runtime failure, and
  // TemplateRaised when the template calls a raise_exception it was given.
  std::string render(const ValueDict& vars) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace triattn::jinja
