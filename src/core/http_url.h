#pragma once
// A server address given on the command line (--url of bench-serve and eval):
// http://HOST[:PORT][/PREFIX], where the API lives under PREFIX ending in /v1 (added when
// missing), as OpenAI clients' base URLs have it: http://127.0.0.1:8080 and
// http://127.0.0.1:8080/v1 name the same API.
#include <string>
#include <string_view>

namespace triattn {

struct HttpUrl {
  std::string host;
  int port = 80;
  std::string api_root = "/v1";  // "/v1", or "/PREFIX/v1"
  std::string origin() const { return "http://" + host + ":" + std::to_string(port); }
};

// Error naming `flag` and the expected shape when `url` is not such an address.
HttpUrl parse_http_url(const std::string& url, std::string_view flag = "--url");

}  // namespace triattn
