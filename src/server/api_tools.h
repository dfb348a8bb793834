#pragma once
// Calling tools through the Responses and Messages APIs: each API's `tools` and `tool_choice`
// translated into chat completions' shape and read by the one reader of tool fields
// (tools_of_request), its errors renamed to the fields the client sent; and a conversation's
// calls and results (function_call items, tool_use and tool_result blocks) as the chat
// messages the template takes (add_tool_history).
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/tool_fields.h"

namespace triattn::server {

// Responses: tools [{type: "function", name, description, parameters, strict}], tool_choice
// ("auto" | "none" | "required" | {type: "function", name}), parallel_tool_calls. Null when
// no tools are offered; another tool type (web_search, file_search, ...) is refused by name.
std::shared_ptr<const ToolRequest> responses_tools(const nlohmann::json& body, const std::string* raw_body,
                                                   const std::string& template_source);

// Messages: tools [{name, description, input_schema}], tool_choice {type: auto | any | tool |
// none, name, disable_parallel_tool_use}. Null when no tools are offered.
std::shared_ptr<const ToolRequest> messages_tools(const nlohmann::json& body, const std::string* raw_body,
                                                  const std::string& template_source);

// The template variables for a request's tools: {tools: [...]} when the model is shown them.
nlohmann::ordered_json tool_template_kwargs(const ToolRequest* tools);

// A call in a conversation: the id it was given, the function, its arguments as JSON text.
struct HistoryCall {
  std::string id, name, arguments;
};

// An assistant turn that made calls, or (tool_call_id set) a tool's result, as a chat message
// with the tool fields the template reads. at: where it came from, for errors.
nlohmann::ordered_json tool_history_message(const std::string& role, const std::string& content,
                                            const std::vector<HistoryCall>& calls, const std::string& tool_call_id,
                                            const std::string& at, ToolSyntax syntax);

}  // namespace triattn::server
