#pragma once
// Which top-level fields of a /v1/completions or /v1/chat/completions body the server knows,
// and the refusal of the rest. A client that sends a field counts on its effect, so none is
// ignored: a field of OpenAI's API the server does not implement gets 400 naming it (unless
// its value asks for nothing, e.g. `tools: []`, `store: false`), and so does a name the
// server does not know at all. The fields it reads are checked where they are read
// (server/completion_request.cpp).
#include <nlohmann/json.hpp>

namespace triattn::server {

// Throws ApiError (400, param = the field) for the first field refused or unknown to this
// endpoint (chat: /v1/chat/completions, else /v1/completions).
void check_request_fields(const nlohmann::json& body, bool chat);

}  // namespace triattn::server
