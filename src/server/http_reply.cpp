#include "server/http_reply.h"

namespace triattn::server {

std::string json_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string sse_event(const nlohmann::json& j) { return "data: " + json_text(j) + "\n\n"; }

}  // namespace triattn::server
