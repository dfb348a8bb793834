// POST /v1/completions and /v1/chat/completions on a worker thread of the HTTP layer: parse
// the body, queue the request on the scheduler, and answer with a reply the HTTP loop polls
// (server/completion_reply.h). The worker never waits for the model. queue_generation is the
// path from a parsed request to the scheduler that every generating endpoint shares.
#include <chrono>
#include <ctime>

#include "core/error.h"
#include "server/api_error.h"
#include "server/api_reply.h"
#include "server/completion_reply.h"
#include "server/error_fields.h"
#include "server/http_reply.h"
#include "server/request_body.h"
#include "server/server.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;

http::Reply error_reply(const ApiError& e, bool retry_later) {
  http::Reply reply;
  reply.response = std::make_unique<http::Response>();
  reply.response->status = e.status;
  reply.response->body = json_text(e.body());
  if (retry_later) reply.response->headers.push_back({"Retry-After", "1"});
  return reply;
}

}  // namespace

Server::Queued Server::queue_generation(const CompletionRequest& parsed, const http::Wake& wake, bool chat,
                                        bool stream_logprobs) {
  // Draining: the load balancer retries elsewhere (a 503 with Retry-After, nothing started).
  if (draining_) throw ApiError(503, "this replica is draining before it stops; send the request to another one");
  Queued q;
  q.ex = std::make_shared<Exchange>();
  Exchange& ex = *q.ex;
  ex.wake = wake;
  try {
    ex.policies = std::make_shared<PolicyFactory>(*model_, parsed.kv);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), kv_error_field(e.what()));
  }
  ex.choices.resize(static_cast<size_t>(parsed.n));
  Request r;
  r.prompt = parsed.prompt;
  r.options = parsed.options;
  r.sampling = parsed.sampling;
  r.n = parsed.n;
  r.policies = ex.policies.get();
  if (options_.request_timeout_s > 0)
    r.deadline = ex.arrival + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(options_.request_timeout_s));
  attach_callbacks(r, q.ex, metrics_, stream_logprobs);
  SubmitResult s;
  try {
    s = scheduler_.submit(std::move(r));
  } catch (const Error& e) {
    throw ApiError(400, e.what(), submit_error_field(e.what(), chat));
  }
  if (s.status == SubmitResult::Status::TooLarge) throw ApiError(400, s.reason, "max_tokens");
  if (s.status == SubmitResult::Status::QueueFull) throw ApiError(503, s.reason);
  q.id = s.id;
  metrics_.prompt(static_cast<int64_t>(parsed.prompt.size()));
  work_cv_.notify_all();
  return q;
}

http::Reply Server::api_reply_of(const Queued& q, std::unique_ptr<ReplyFormat> format,
                                 const CompletionRequest& parsed) {
  ApiReplyParts parts;
  parts.ex = q.ex;
  parts.format = std::move(format);
  parts.split_reasoning = options_.split_reasoning;
  parts.opens_reasoning = ReasoningSplit::prompt_opens_reasoning(parsed.prompt_text);
  parts.tools = parsed.tools;
  parts.scheduler = &scheduler_;
  parts.metrics = &metrics_;
  parts.id = q.id;
  return api_reply(std::move(parts), parsed.stream);
}

http::Reply Server::handle_apply_template(http::Request& req) {
  try {
    // Checked as a chat completion's body, so what renders here is what a completion would feed.
    const json body = parse_request_body(req.body);
    const CompletionRequest r = parse_completion_request(body, true, *model_, chat_prompt_, options_.defaults, &req.body);
    metrics_.request(200);
    return reply_now(200, {{"prompt", r.prompt_text}});
  } catch (const ApiError& e) {
    metrics_.request(e.status);
    return error_reply(e, false);
  }
}

http::Reply Server::handle_completion(http::Request& req, const http::Wake& wake, bool chat) {
  auto parsed = std::make_shared<CompletionRequest>();
  Queued q;
  try {
    if (stopping_) throw ApiError(503, "the server is shutting down");
    const json body = parse_request_body(req.body);
    *parsed = parse_completion_request(body, chat, *model_, chat_prompt_, options_.defaults, &req.body);
    req.body.clear();
    req.body.shrink_to_fit();
    // A stream sends the text as it comes: the engine keeps none of it for the end.
    parsed->options.keep_output = !parsed->stream;
    q = queue_generation(*parsed, wake, chat, parsed->stream && parsed->logprobs >= 0);
  } catch (const ApiError& e) {
    metrics_.request(e.status);
    return error_reply(e, e.status == 503);
  }
  const std::shared_ptr<Exchange>& ex = q.ex;
  const uint64_t id = q.id;

  ReplyParts parts;
  parts.request = parsed;
  parts.ex = ex;
  parts.ctx.tok = &model_->tokenizer();
  parts.ctx.request = parsed.get();
  parts.ctx.split_reasoning = chat && options_.split_reasoning;
  parts.ctx.opens_reasoning = ReasoningSplit::prompt_opens_reasoning(parsed->prompt_text);
  parts.envelope.id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(id);
  parts.envelope.created = static_cast<int64_t>(std::time(nullptr));
  parts.envelope.model = model_->config().name;
  parts.envelope.seed = parsed->sampling.seed;
  parts.envelope.chat = chat;
  parts.envelope.metadata = parsed->metadata;
  parts.scheduler = &scheduler_;
  parts.metrics = &metrics_;
  parts.id = id;

  http::Reply reply;
  if (!parsed->stream) {
    reply.pending = std::make_shared<WholeReply>(std::move(parts));
    return reply;
  }
  reply.response = std::make_unique<http::Response>();
  reply.response->content_type = "text/event-stream";
  reply.response->headers.push_back({"Cache-Control", "no-cache"});
  reply.response->stream = std::make_shared<StreamReply>(std::move(parts));
  return reply;
}

}  // namespace triattn::server
