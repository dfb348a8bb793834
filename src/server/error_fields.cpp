#include "server/error_fields.h"

namespace triattn::server {

std::string kv_error_field(std::string_view message) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"--kv-budget", "kv_budget"}, {"--divide-length", "divide_length"}, {"--window", "window"},
      {"--sink", "sink"},           {"--protect-prompt", "protect_prompt"}, {"--pruning-mode", "pruning_mode"}};
  size_t best = std::string_view::npos;
  std::string_view field = "kv_policy";
  for (const auto& [flag, name] : kFlags) {
    const size_t at = message.find(flag);
    if (at < best) {
      best = at;
      field = name;
    }
  }
  return std::string(field);
}

std::string submit_error_field(std::string_view message, bool chat) {
  if (message.rfind("n = ", 0) == 0) return "n";
  if (message.find("prompt") != std::string_view::npos || message.find("token id") != std::string_view::npos)
    return chat ? "messages" : "prompt";
  return "";
}

}  // namespace triattn::server
