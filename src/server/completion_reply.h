#pragma once
// The reply to one accepted completion request, on both sides of the engine. The scheduler's
// callbacks (inference thread) fill an Exchange and wake the HTTP loop; the loop then polls a
// WholeReply (the JSON reply once every choice is done) or pulls a StreamReply (server-sent
// events as the text comes). Neither blocks, and what has been sent is dropped: a stream
// holds only the text and log-probabilities not yet sent, however long it runs.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/generate.h"
#include "engine/kv_setup.h"
#include "engine/scheduler.h"
#include "server/completion_request.h"
#include "server/completion_response.h"
#include "server/http/http_server.h"
#include "server/metrics.h"
#include "server/tool_reply.h"

namespace triattn::server {

// A sampled token as the stream needs it: where its text begins, and its log-probabilities.
struct StreamToken {
  int32_t id;
  size_t text_offset;
  TokenLogprob logprob;
};

struct ChoiceState {
  std::string text;                // produced, not yet taken by the reply
  std::vector<StreamToken> tokens; // with log-probabilities asked for: not yet sent
  size_t text_bytes = 0;           // produced in all (the tokens' offsets count from 0)
  bool done = false;
  GenerateResult result;
  std::optional<std::chrono::steady_clock::time_point> last_token;
};

// What a request's reply and the inference thread share.
struct Exchange {
  std::mutex mu;
  std::vector<ChoiceState> choices;
  int done_count = 0;
  bool first_token_seen = false;
  std::chrono::steady_clock::time_point arrival = std::chrono::steady_clock::now();
  std::atomic<bool> gone{false};            // nobody reads the reply: stop generating
  std::shared_ptr<PolicyFactory> policies;  // the request's KV settings, alive until done
  http::Wake wake;
  bool all_done() const { return done_count == static_cast<int>(choices.size()); }
};

// Connects a request to its Exchange: the callbacks the scheduler runs for each choice.
void attach_callbacks(Request& r, const std::shared_ptr<Exchange>& ex, ServerMetrics& metrics, bool keep_logprobs);

// The fixed parts of every reply: id, creation time, model, seed, object type, and the
// request's metadata (a whole chat completion carries it, as OpenAI's; chunks do not).
struct ReplyEnvelope {
  std::string id;
  int64_t created = 0;
  std::string model;
  uint64_t seed = 0;
  bool chat = false;
  nlohmann::json metadata;  // null: none
  nlohmann::json wrap(nlohmann::json choices, bool chunk) const;
};

// Shared by both kinds of reply: the request, its exchange and what cancels it.
struct ReplyParts {
  std::shared_ptr<CompletionRequest> request;
  std::shared_ptr<Exchange> ex;
  ReplyContext ctx;
  ReplyEnvelope envelope;
  Scheduler* scheduler = nullptr;
  ServerMetrics* metrics = nullptr;
  uint64_t id = 0;  // the scheduler's
};

// Non-streamed: the whole JSON reply once every choice is done.
class WholeReply : public http::PendingReply {
 public:
  explicit WholeReply(ReplyParts parts) : p_(std::move(parts)) {}
  std::unique_ptr<http::Response> poll() override;
  void stop(http::BodyStream::Stop why) override;

 private:
  ReplyParts p_;
  bool stopping_ = false;
};

// Streamed: server-sent events, one choice per event, then usage (when asked) and [DONE].
class StreamReply : public http::BodyStream {
 public:
  explicit StreamReply(ReplyParts parts);
  bool pull(std::string& out) override;
  void stop(Stop why) override;

 private:
  struct Sent {
    bool first = true;  // no chunk yet (chat: the first carries the role)
    bool finished = false;
    std::unique_ptr<ReplyReader> reader;  // the reasoning split, and chat's tool calls
  };
  ReplyParts p_;
  std::vector<Sent> sent_;
  bool head_sent_ = false;  // the role chunks (and an echoed prompt)
  bool stopping_ = false;
  bool ended_ = false;
};

}  // namespace triattn::server
