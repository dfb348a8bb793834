#pragma once
// The request fields for calling tools: `tools` (functions, each with JSON Schema parameters),
// `tool_choice` (auto | none | required | {"type": "function", "function": {"name"}}) and
// `parallel_tool_calls`, checked and read into what the prompt, the grammar and the reply's
// parser need; and a conversation's tool history (assistant tool_calls, tool results) as the
// model's template takes it. Every refusal is an ApiError (400) naming the field.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/tool_call_syntax.h"
#include "grammar/token_mask.h"
#include "grammar/vocab_trie.h"

namespace triattn::server {

class GrammarCache;

struct ToolRequest {
  // none: the model answers in text: the tools are not shown to it and no call is read.
  enum class Choice { Auto, None, Required, Named };
  std::vector<ToolSpec> tools;
  nlohmann::ordered_json template_tools;  // `tools` as sent, the template's `tools` variable
  Choice choice = Choice::Auto;
  std::string named;  // Named: the function
  bool parallel = true;
  ToolSyntax syntax = ToolSyntax::None;

  bool reads_calls() const { return choice != Choice::None; }
  bool forces_calls() const { return choice == Choice::Required || choice == Choice::Named; }
};

// Null when the request offers no tools. raw_body: the request's text, read again for the
// key order of the schemas. template_source: the chat template (its call syntax; a request
// with tools for a template that shows none is refused).
std::shared_ptr<const ToolRequest> tools_of_request(const nlohmann::json& body, const std::string* raw_body,
                                                    const std::string& template_source);

// The tool fields of one message (at: "messages[i]") added to what the template gets:
// an assistant's tool_calls, their arguments as an object (a template that concatenates them
// as text, DeepSeek-R1's, keeps the string), and a tool result's tool_call_id and name.
void add_tool_history(const nlohmann::json& msg, const std::string& at, ToolSyntax syntax,
                      nlohmann::ordered_json& out);

// The grammar that makes the reply calls (tool_choice required or named); null otherwise.
// prompt_text: the rendered prompt (whether the reply starts inside <think>).
std::shared_ptr<grammar::TokenMasker> tool_grammar(const ToolRequest& t, const std::string& prompt_text,
                                                   const std::string& template_source,
                                                   std::shared_ptr<const grammar::VocabTrie> vocab, GrammarCache* cache);

}  // namespace triattn::server
