#include "server/api_reply.h"

#include "server/http_reply.h"

namespace triattn::server {

namespace {

std::unique_ptr<http::Response> body_response(int status, const nlohmann::json& body) {
  auto r = std::make_unique<http::Response>();
  r->status = status;
  r->body = json_text(body);
  return r;
}

// An engine result that is a failure, as the API error it is answered with (else null).
std::unique_ptr<ApiError> failure_of(const GenerateResult& g) {
  if (g.finish_reason == "error") return std::make_unique<ApiError>(500, g.error);
  if (g.finish_reason == "timeout") return std::make_unique<ApiError>(504, g.error, "", "timeout");
  return nullptr;
}

}  // namespace

std::string named_sse_event(const std::string& name, const nlohmann::json& data) {
  return "event: " + name + "\ndata: " + json_text(data) + "\n\n";
}

http::Reply reply_now(int status, const nlohmann::json& body) {
  http::Reply reply;
  reply.response = body_response(status, body);
  if (status == 503) reply.response->headers.push_back({"Retry-After", "1"});
  return reply;
}

std::unique_ptr<http::Response> ApiWholeReply::poll() {
  GenerateResult g;
  {
    std::lock_guard<std::mutex> lock(p_.ex->mu);
    if (!p_.ex->all_done()) {
      if (!stopping_) return nullptr;
      p_.metrics->request(503);
      return body_response(503, p_.format->error_body(ApiError(503, "the server is shutting down")));
    }
    g = p_.ex->choices[0].result;
  }
  if (auto e = failure_of(g)) {
    p_.metrics->request(e->status);
    return body_response(e->status, p_.format->error_body(*e));
  }
  p_.metrics->request(200);
  ReplyReader reader(p_.split_reasoning, p_.opens_reasoning, p_.tools.get());
  const ReplyReader::Out all = reader.push(g.text, true);
  return body_response(200, p_.format->whole(g, all.text, all.calls));
}

void ApiWholeReply::stop(http::BodyStream::Stop why) {
  if (why == http::BodyStream::Stop::ClientGone) {
    p_.ex->gone = true;
    p_.metrics->request(499);
  }
  stopping_ = true;
  p_.scheduler->cancel(p_.id);
}

ApiStreamReply::ApiStreamReply(ApiReplyParts parts)
    : p_(std::move(parts)), reader_(p_.split_reasoning, p_.opens_reasoning, p_.tools.get()) {}

void ApiStreamReply::stop(Stop why) {
  if (why == Stop::ClientGone) {
    p_.ex->gone = true;
    if (!ended_) p_.metrics->request(499);
    ended_ = true;
  }
  stopping_ = true;
  p_.scheduler->cancel(p_.id);
}

bool ApiStreamReply::pull(std::string& out) {
  if (ended_) return false;
  if (!began_) {
    began_ = true;
    out += p_.format->stream_begin();
  }
  std::string text;
  bool done = false;
  GenerateResult g;
  {
    std::lock_guard<std::mutex> lock(p_.ex->mu);
    ChoiceState& st = p_.ex->choices[0];
    text.swap(st.text);
    done = st.done;
    if (done) g = st.result;
  }
  const ReplyReader::Out read = reader_.push(text, done);
  const ReasoningSplit::Out& piece = read.text;
  auto fail = [&](const ApiError& e) {
    p_.scheduler->cancel(p_.id);
    out += p_.format->stream_error(e);
    p_.metrics->request(e.status);
    ended_ = true;
    return false;
  };
  if (done)
    if (auto e = failure_of(g)) return fail(*e);
  if (!piece.reasoning.empty() || !piece.content.empty() || !read.calls.empty()) {
    out += p_.format->stream_piece(piece, read.calls);
    all_.reasoning += piece.reasoning;
    all_.content += piece.content;
  }
  if (!done) {
    if (stopping_) return fail(ApiError(503, "the server is shutting down"));
    return true;
  }
  out += p_.format->stream_end(g, all_);
  p_.metrics->request(200);
  ended_ = true;
  return false;
}

http::Reply api_reply(ApiReplyParts parts, bool stream) {
  http::Reply reply;
  if (!stream) {
    reply.pending = std::make_shared<ApiWholeReply>(std::move(parts));
    return reply;
  }
  reply.response = std::make_unique<http::Response>();
  reply.response->content_type = "text/event-stream";
  reply.response->headers.push_back({"Cache-Control", "no-cache"});
  reply.response->stream = std::make_shared<ApiStreamReply>(std::move(parts));
  return reply;
}

}  // namespace triattn::server
