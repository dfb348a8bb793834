#include "server/error_fields.h"

#include "kv/policy.h"

namespace triattn::server {

std::string kv_error_field(std::string_view message) {
  size_t best = std::string_view::npos;
  std::string field = "kv_policy";
  for (const auto* knobs : {&kv_shared_params(), &kv_policy_knobs()})
    for (const PolicyKnob& k : *knobs) {
      const size_t at = message.find(k.flag);
      if (at < best) {
        best = at;
        field = knob_field(k);
      }
    }
  return field;
}

std::string submit_error_field(std::string_view message, bool chat) {
  if (message.rfind("n = ", 0) == 0) return "n";
  if (message.find("prompt") != std::string_view::npos || message.find("token id") != std::string_view::npos)
    return chat ? "messages" : "prompt";
  return "";
}

}  // namespace triattn::server
