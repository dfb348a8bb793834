#pragma once
// Writing JSON bodies and server-sent events (invalid UTF-8 from a model's bytes is replaced,
// never an exception).
#include <string>

#include <nlohmann/json.hpp>

namespace httplib {
struct Response;
}

namespace triattn::server {

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
std::string sse_event(const nlohmann::json& j);  // "data: {...}\n\n"
std::string json_text(const nlohmann::json& j);

}  // namespace triattn::server
