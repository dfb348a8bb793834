#pragma once
// The request field an engine error is about, for the "param" of a 400 reply. The KV
// settings are checked by the policy registry that the command line shares, so their
// messages name flags (--kv-budget, --sink, ...): the first flag named maps to its body field
// (knob_field).
// The scheduler's refusals are about n or the prompt.
#include <string>
#include <string_view>

namespace triattn::server {

std::string kv_error_field(std::string_view message);
// chat: the prompt is "messages", else "prompt".
std::string submit_error_field(std::string_view message, bool chat);

}  // namespace triattn::server
