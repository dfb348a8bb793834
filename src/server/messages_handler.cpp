// POST /v1/messages and /v1/messages/count_tokens on a worker thread of the HTTP layer: the
// request is read by server/messages_api.h and queued on the path every generating endpoint
// shares (queue_generation); errors in Anthropic's shape.
#include "core/error.h"
#include "server/api_fields.h"
#include "server/api_reply.h"
#include "server/completion_reply.h"
#include "server/messages_api.h"
#include "server/request_body.h"
#include "server/server.h"

namespace triattn::server {

http::Reply Server::handle_messages(http::Request& req, const http::Wake& wake, bool count_only) {
  MessagesRequest parsed;
  Queued q;
  try {
    if (stopping_) throw ApiError(503, "the server is shutting down");
    const nlohmann::json body = parse_request_body(req.body);
    parsed = parse_messages_request(body, &req.body, *model_, chat_prompt_, options_.defaults, count_only);
    req.body.clear();
    req.body.shrink_to_fit();
    if (count_only) {
      metrics_.request(200);
      return reply_now(200, {{"input_tokens", parsed.gen.prompt.size()}});
    }
    parsed.gen.options.keep_output = true;  // the reply's tokens tell which stop sequence ended it
    q = queue_generation(parsed.gen, wake, /*chat=*/true, false);
  } catch (const ApiError& e) {
    metrics_.request(e.status);
    return reply_now(e.status, anthropic_error(e));
  }
  MessagesFormat::Setup setup;
  setup.id = "msg_" + random_hex(24);
  setup.model = model_->config().name;
  setup.tok = &model_->tokenizer();
  setup.input_tokens = static_cast<int64_t>(parsed.gen.prompt.size());
  setup.stop = parsed.gen.options.stop;
  return api_reply_of(q, std::make_unique<MessagesFormat>(std::move(setup)), parsed.gen);
}

}  // namespace triattn::server
