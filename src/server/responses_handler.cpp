// POST /v1/responses, GET and DELETE /v1/responses/{id} on a worker thread of the HTTP layer:
// the request is read by server/responses_api.h and queued on the path every generating
// endpoint shares (queue_generation); stored responses are kept in the server's ResponseStore.
#include <ctime>

#include "core/error.h"
#include "server/api_fields.h"
#include "server/api_reply.h"
#include "server/completion_reply.h"
#include "server/request_body.h"
#include "server/responses_api.h"
#include "server/server.h"

namespace triattn::server {

http::Reply Server::handle_responses(http::Request& req, const http::Wake& wake) {
  ResponsesRequest parsed;
  Queued q;
  try {
    if (stopping_) throw ApiError(503, "the server is shutting down");
    const nlohmann::json body = parse_request_body(req.body);
    parsed = parse_responses_request(body, req.body, *model_, chat_prompt_, options_.defaults, responses_);
    req.body.clear();
    req.body.shrink_to_fit();
    // The reply's token ids are stored for previous_response_id, streamed or not.
    parsed.gen.options.keep_output = true;
    try {
      q = queue_generation(parsed.gen, wake, /*chat=*/true, false);
    } catch (const ApiError& e) {
      throw renamed_error(e, {{"messages", "input"}, {"max_tokens", "max_output_tokens"}});
    }
  } catch (const ApiError& e) {
    metrics_.request(e.status);
    return reply_now(e.status, e.body());
  }
  ResponsesFormat::Setup setup;
  setup.id = "resp_" + random_hex(32);
  setup.created_at = static_cast<int64_t>(std::time(nullptr));
  setup.model = model_->config().name;
  setup.tok = &model_->tokenizer();
  setup.prompt = std::move(parsed.gen.prompt);
  setup.store = parsed.store;
  setup.store_into = &responses_;
  setup.echo = std::move(parsed.echo);
  return api_reply_of(q, std::make_unique<ResponsesFormat>(std::move(setup)), parsed.gen);
}

http::Reply Server::handle_stored_response(const http::Request& req) {
  const std::string id = req.path.substr(std::string("/v1/responses/").size());
  auto reply = [&](int status, const nlohmann::json& body) {
    metrics_.request(status);
    return reply_now(status, body);
  };
  if (req.method != "GET" && req.method != "DELETE") {
    http::Reply r = reply(405, ApiError(405, req.path + " takes GET or DELETE, not " + req.method).body());
    r.response->headers.push_back({"Allow", "GET, DELETE"});
    return r;
  }
  const auto stored = responses_.find(id);
  if (!stored || (req.method == "DELETE" && !responses_.erase(id)))
    return reply(404, ApiError(404, "no stored response '" + id + "'").body());
  if (req.method == "GET") return reply(200, stored->response);
  scheduler_.drop_kept(stored->tokens);  // its KV cache goes now, not when room is needed
  return reply(200, {{"id", id}, {"object", "response"}, {"deleted", true}});
}

}  // namespace triattn::server
