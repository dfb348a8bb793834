#include "core/http_url.h"

#include <charconv>
#include <regex>

#include "core/error.h"

namespace triattn {

HttpUrl parse_http_url(const std::string& url, std::string_view flag) {
  static const std::regex re(R"(^http://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:]+\])(?::(\d{1,5}))?(/[^?#]*)?$)");
  std::smatch m;
  if (!std::regex_match(url, m, re))
    fail(flag, " '", url, "' must look like http://HOST:PORT (optionally with a path such as /v1)");
  HttpUrl u;
  u.host = m[1].str();
  if (m[2].matched) {
    const std::string p = m[2].str();
    std::from_chars(p.data(), p.data() + p.size(), u.port);
    if (u.port < 1 || u.port > 65535) fail(flag, " '", url, "': the port must be between 1 and 65535");
  }
  std::string prefix = m[3].matched ? m[3].str() : "";
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (prefix.size() < 3 || prefix.compare(prefix.size() - 3, 3, "/v1") != 0) prefix += "/v1";
  u.api_root = prefix;
  return u;
}

}  // namespace triattn
