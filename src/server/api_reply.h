#pragma once
// The reply to a one-choice request of the Responses or Messages API: the polling of its
// Exchange, the reasoning split and the errors are the same for both; each API's JSON and
// stream events come from its ReplyFormat. Like the completion replies, neither kind of
// reply blocks, and a stream holds only the text not yet sent.
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/generate.h"
#include "engine/scheduler.h"
#include "server/api_error.h"
#include "server/completion_reply.h"
#include "server/http/http_server.h"
#include "server/metrics.h"
#include "server/reasoning_split.h"
#include "server/tool_reply.h"

namespace triattn::server {

// One API's bodies and events. `text` is the reply split into reasoning and answer; `calls`
// the tool calls read out of it (ToolCallReader's entries; empty without tools).
class ReplyFormat {
 public:
  virtual ~ReplyFormat() = default;
  virtual nlohmann::json whole(const GenerateResult& r, const ReasoningSplit::Out& text, const nlohmann::json& calls) = 0;
  virtual nlohmann::json error_body(const ApiError& e) const = 0;
  // Streamed: the opening events, each new piece of text and the calls read with it, the
  // closing events.
  virtual std::string stream_begin() = 0;
  virtual std::string stream_piece(const ReasoningSplit::Out& piece, const nlohmann::json& calls) = 0;
  virtual std::string stream_end(const GenerateResult& r, const ReasoningSplit::Out& text) = 0;
  virtual std::string stream_error(const ApiError& e) = 0;
};

// "event: NAME\ndata: {...}\n\n", as the Responses and Messages APIs stream.
std::string named_sse_event(const std::string& name, const nlohmann::json& data);
// A JSON reply now (503: with Retry-After).
http::Reply reply_now(int status, const nlohmann::json& body);

struct ApiReplyParts {
  std::shared_ptr<Exchange> ex;
  std::unique_ptr<ReplyFormat> format;
  bool split_reasoning = false;
  bool opens_reasoning = false;  // the prompt ends inside <think>
  std::shared_ptr<const ToolRequest> tools;  // null: no calls are read
  Scheduler* scheduler = nullptr;
  ServerMetrics* metrics = nullptr;
  uint64_t id = 0;  // the scheduler's
};

class ApiWholeReply : public http::PendingReply {
 public:
  explicit ApiWholeReply(ApiReplyParts parts) : p_(std::move(parts)) {}
  std::unique_ptr<http::Response> poll() override;
  void stop(http::BodyStream::Stop why) override;

 private:
  ApiReplyParts p_;
  bool stopping_ = false;
};

class ApiStreamReply : public http::BodyStream {
 public:
  explicit ApiStreamReply(ApiReplyParts parts);
  bool pull(std::string& out) override;
  void stop(Stop why) override;

 private:
  ApiReplyParts p_;
  ReplyReader reader_;
  ReasoningSplit::Out all_;  // everything sent, for the closing events
  bool began_ = false, stopping_ = false, ended_ = false;
};

// The reply for a queued request: whole, or a stream of server-sent events.
http::Reply api_reply(ApiReplyParts parts, bool stream);

}  // namespace triattn::server
