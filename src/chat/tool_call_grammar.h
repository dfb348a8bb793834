#pragma once
// The grammar (GBNF text) that makes a reply tool calls in a family's own syntax, each call's
// arguments held to its function's JSON Schema: what enforces tool_choice "required" or a
// named function. Parsed back by ToolCallParser of the same syntax.
#include <string>
#include <vector>

#include "chat/tool_call_syntax.h"

namespace triattn {

struct ToolGrammarOptions {
  bool parallel = true;  // one or more calls; false: exactly one (harmony: always one)
  // Thinking before the calls: none; optional (<think>…</think> first, when the model likes);
  // or open (the prompt ends inside <think>: the reply starts in it and must close it).
  enum class Reasoning { None, Optional, Open } reasoning = Reasoning::None;
};

// `tools`: the functions the calls may name (one, for a named tool_choice). Throws Error
// naming the function whose schema is not supported, or the syntax that has no grammar.
std::string tool_call_gbnf(ToolSyntax syntax, const std::vector<ToolSpec>& tools, const ToolGrammarOptions& opt);

}  // namespace triattn
