#include "server/tool_reply.h"

namespace triattn::server {

using json = nlohmann::json;

ToolCallReader::ToolCallReader(const ToolRequest& t)
    : syntax_(t.syntax), parallel_(t.parallel), parser_(t.syntax, t.tools) {}

ToolCallReader::Out ToolCallReader::push(const std::string& piece) { return take(parser_.push(piece), false); }

ToolCallReader::Out ToolCallReader::finish() { return take(parser_.finish(), true); }

ToolCallReader::Out ToolCallReader::take(ToolCallParser::Out o, bool at_end) {
  Out out;
  // Text goes out up to its last non-blank byte; the blanks after wait for more text (a call
  // or the end drops them), and blanks before any text are dropped.
  blank_ += o.text;
  const size_t last = blank_.find_last_not_of(" \t\r\n");
  if (last != std::string::npos) {
    const size_t first = text_seen_ ? 0 : blank_.find_first_not_of(" \t\r\n");
    out.text = blank_.substr(first, last + 1 - first);
    blank_.erase(0, last + 1);
    text_seen_ = true;
  }
  if (!o.calls.empty() || at_end) blank_.clear();
  for (ParsedToolCall& c : o.calls) {
    if (!parallel_ && count_ > 0) break;
    out.calls.push_back({{"index", count_++},
                         {"id", new_tool_call_id(syntax_)},
                         {"type", "function"},
                         {"function", {{"name", std::move(c.name)}, {"arguments", std::move(c.arguments)}}}});
  }
  return out;
}

json ToolCallReader::stream_deltas(const json& call) {
  return json::array({{{"index", call["index"]},
                       {"id", call["id"]},
                       {"type", "function"},
                       {"function", {{"name", call["function"]["name"]}, {"arguments", ""}}}},
                      {{"index", call["index"]}, {"function", {{"arguments", call["function"]["arguments"]}}}}});
}

ReplyReader::ReplyReader(bool split_reasoning, bool opens_reasoning, const ToolRequest* tools)
    : split_(split_reasoning, opens_reasoning) {
  if (tools && tools->reads_calls()) tools_ = std::make_unique<ToolCallReader>(*tools);
}

ReplyReader::Out ReplyReader::push(const std::string& piece, bool last) {
  Out out;
  auto read_calls = [&](const std::string& text) {
    ToolCallReader::Out x = tools_->push(text);
    if (last) {
      ToolCallReader::Out y = tools_->finish();
      x.text += y.text;
      for (json& call : y.calls) x.calls.push_back(std::move(call));
    }
    for (json& call : x.calls) out.calls.push_back(std::move(call));
    return x.text;
  };
  const std::string raw = tools_ && tools_->before_split() ? read_calls(piece) : piece;
  out.text = split_.push(raw);
  if (last) {
    const ReasoningSplit::Out rest = split_.flush();
    out.text.reasoning += rest.reasoning;
    out.text.content += rest.content;
  }
  if (tools_ && !tools_->before_split()) out.text.content = read_calls(out.text.content);
  return out;
}

}  // namespace triattn::server
