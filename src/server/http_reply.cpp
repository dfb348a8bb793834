#include "server/http_reply.h"

#include <httplib.h>

namespace triattn::server {

std::string json_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(json_text(body), "application/json");
}

std::string sse_event(const nlohmann::json& j) { return "data: " + json_text(j) + "\n\n"; }

}  // namespace triattn::server
