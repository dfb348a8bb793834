#pragma once
// Builds the syntax tree from the token stream. Unknown tags, filters and tests are syntax
// errors here (Jinja reports them at compile time too), so a template that parses only fails
// at render time on data-dependent problems.
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace triattn::jinja {

// Throws Error("chat template line N: ...").
Body parse(const std::vector<Token>& tokens);

}  // namespace triattn::jinja
