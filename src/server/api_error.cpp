#include "server/api_error.h"

namespace triattn::server {

nlohmann::json ApiError::body() const {
  std::string t = type;
  if (t.empty()) {
    if (status == 401) t = "authentication_error";
    else if (status == 404) t = "not_found_error";
    else if (status == 503) t = "server_overloaded";
    else if (status >= 500) t = "server_error";
    else t = "invalid_request_error";
  }
  return {{"error",
           {{"message", what()}, {"type", t}, {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
            {"code", nullptr}}}};
}

}  // namespace triattn::server
