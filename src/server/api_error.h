#pragma once
// A request the server refuses: the HTTP status and an OpenAI-style error object
// {"error": {"message", "type", "param", "code"}} naming the problem.
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace triattn::server {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "", std::string type = "")
      : std::runtime_error(message), status(status), param(std::move(param)), type(std::move(type)) {}
  int status;
  std::string param;
  std::string type;  // "" = from the status: invalid_request_error, authentication_error, ...

  nlohmann::json body() const;
};

}  // namespace triattn::server
