#pragma once
// A request body as JSON, for every endpoint that takes one: the nesting is checked on the
// bytes before the JSON parser (or anything that walks the value recursively) sees them.
#include <string>

#include <nlohmann/json.hpp>

namespace triattn::server {

// Throws ApiError (400) when the body nests too deep or is not valid JSON.
nlohmann::json parse_request_body(const std::string& text);

}  // namespace triattn::server
