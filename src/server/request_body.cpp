#include "server/request_body.h"

#include "server/api_error.h"
#include "server/json_depth.h"

namespace triattn::server {

nlohmann::json parse_request_body(const std::string& text) {
  if (const auto deep = json_too_deep(text, kMaxJsonDepth))
    throw ApiError(400, "the request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                            std::to_string(*deep) + ")");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
  }
}

}  // namespace triattn::server
