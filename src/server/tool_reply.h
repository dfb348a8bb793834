#pragma once
// The tool calls of one chat choice, read from its text as it comes (both the whole reply and
// the stream use it): the calls become message.tool_calls / delta.tool_calls with fresh ids,
// the rest stays content. White space between calls and around them is not content. With
// parallel_tool_calls false, calls after the first are dropped.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/tool_call_syntax.h"
#include "server/reasoning_split.h"
#include "server/tool_fields.h"

namespace triattn::server {

class ToolCallReader {
 public:
  explicit ToolCallReader(const ToolRequest& t);

  // Harmony's calls are messages of their own: read from the raw text, before the reasoning
  // split; every other family's from the split's content.
  bool before_split() const { return syntax_ == ToolSyntax::Harmony; }

  struct Out {
    std::string text;
    nlohmann::json calls = nlohmann::json::array();  // message.tool_calls entries, each with its "index"
  };
  Out push(const std::string& piece);
  Out finish();
  int count() const { return count_; }  // calls read so far

  // Streamed: one call as two delta.tool_calls entries (id, type and name; then the arguments).
  static nlohmann::json stream_deltas(const nlohmann::json& call);

 private:
  Out take(ToolCallParser::Out o, bool at_end);

  ToolSyntax syntax_;
  bool parallel_;  // false: the first call only (parallel_tool_calls)
  ToolCallParser parser_;
  std::string blank_;  // white space held until text follows it
  bool text_seen_ = false;
  int count_ = 0;
};

// A one-choice reply's text as it comes, split into reasoning and answer, its tool calls read
// out (harmony's from the raw text before the split, every other family's from the answer):
// what every chat reply (choices, Responses items, Messages blocks) is built from.
class ReplyReader {
 public:
  // tools: null, or tool_choice none: no call is read.
  ReplyReader(bool split_reasoning, bool opens_reasoning, const ToolRequest* tools);

  struct Out {
    ReasoningSplit::Out text;
    nlohmann::json calls = nlohmann::json::array();  // as ToolCallReader gives them
  };
  // last: the reply has ended (what is held back comes out).
  Out push(const std::string& piece, bool last);
  int calls() const { return tools_ ? tools_->count() : 0; }  // read so far

 private:
  ReasoningSplit split_;
  std::unique_ptr<ToolCallReader> tools_;
};

}  // namespace triattn::server
