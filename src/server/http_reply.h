#pragma once
// JSON bodies and server-sent events as text (invalid UTF-8 from a model's bytes is replaced,
// never an exception).
#include <string>

#include <nlohmann/json.hpp>

namespace triattn::server {

std::string sse_event(const nlohmann::json& j);  // "data: {...}\n\n"
std::string json_text(const nlohmann::json& j);

}  // namespace triattn::server
