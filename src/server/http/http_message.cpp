#include "server/http/http_message.h"

#include <cctype>

namespace triattn::http {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

const std::string* Request::header(std::string_view name) const {
  for (const Header& h : headers)
    if (iequals(h.name, name)) return &h.value;
  return nullptr;
}

bool Request::keep_alive() const {
  const std::string* c = header("Connection");
  // A list such as "keep-alive, Upgrade": look for the one option that matters.
  auto has = [&](std::string_view option) {
    if (!c) return false;
    size_t start = 0;
    while (start <= c->size()) {
      size_t end = c->find(',', start);
      if (end == std::string::npos) end = c->size();
      std::string_view item(c->data() + start, end - start);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (iequals(item, option)) return true;
      start = end + 1;
    }
    return false;
  };
  return minor_version >= 1 ? !has("close") : has("keep-alive");
}

std::string_view status_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

}  // namespace triattn::http
