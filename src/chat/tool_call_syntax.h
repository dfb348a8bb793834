#pragma once
// How a model family writes tool calls in its reply, and reading them back out of the text it
// generates, whole or in streamed pieces. Plain structs in and out (no API's JSON), so every
// endpoint that offers tools shares one parser per family:
//   Hermes (Qwen2.5, Qwen3, QwQ):  <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call>
//   QwenXml (Qwen3.5, Qwen3.6):    <tool_call>\n<function=N>\n<parameter=P>\nV\n</parameter>\n</function>\n</tool_call>
//   Llama3 (3.1, 3.2, 3.3):        {"name": N, "parameters": {...}} as the whole reply, or after <|python_tag|>
//   Mistral:                       [TOOL_CALLS][{"name": N, "arguments": {...}}, ...]
//   DeepSeekR1:                    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\n{...}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
//   Harmony (gpt-oss):             a message whose header names to=functions.N; its body is the arguments
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace triattn {

enum class ToolSyntax { None, Hermes, QwenXml, Llama3, Mistral, DeepSeekR1, Harmony };

// The family a chat template writes tool calls in, recognised by the markers in its source
// (None: the template shows no tool-call syntax it knows).
ToolSyntax tool_syntax_of_template(std::string_view template_source);
const char* tool_syntax_name(ToolSyntax s);

// A function the model may call: its JSON Schema parameters keep the client's key order.
struct ToolSpec {
  std::string name, description;
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();
};

// A fresh id for a call the model made: "call_" and 24 alphanumerics (Mistral: 9
// alphanumerics, as its template checks).
std::string new_tool_call_id(ToolSyntax s);

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // a JSON object, as compact text
};

// Reads a reply as it streams: the text outside tool calls comes out as soon as it cannot be
// the start of a call marker, each call once it is complete. A call region that does not
// parse comes out as text, as the model wrote it. `tools` (may be empty) gives the parameter
// types that QwenXml's untyped values are read by.
class ToolCallParser {
 public:
  explicit ToolCallParser(ToolSyntax syntax, std::vector<ToolSpec> tools = {});

  struct Out {
    std::string text;                   // outside calls, in order
    std::vector<ParsedToolCall> calls;  // completed in this piece
  };
  Out push(std::string_view piece);
  Out finish();  // the end of the reply: what is held back, an unclosed call parsed if it can be

  // A whole reply at once.
  static Out parse(ToolSyntax syntax, std::string_view text, std::vector<ToolSpec> tools = {});

 private:
  enum class State { Text, Call, HarmonyHeader, HarmonyBody };
  void run(Out& out, bool at_end);
  bool call_region(Out& out, bool at_end);
  bool harmony_header(Out& out, bool at_end);
  bool harmony_body(Out& out, bool at_end);
  // The calls a closed region holds; nullopt when it does not parse.
  std::optional<std::vector<ParsedToolCall>> parse_region(std::string_view body) const;

  ToolSyntax syntax_;
  std::vector<ToolSpec> tools_;
  State state_;
  std::string buf_;           // text not yet given out
  std::string open_, close_;  // the marker that opened the current call region, and its end ("" = the reply's end)
  bool seen_text_ = false;    // Llama3: a reply that starts with '{' is a call
  std::string harmony_name_;  // the function the current harmony message calls ("" = none)
};

}  // namespace triattn
