// The server's request path: a POST body (JSON) -> CompletionRequest (sampling, generation
// options, stop strings, logprobs, KV settings, the prompt: text, token ids or chat messages
// rendered by the model's template and tokenized) -> the KV policy factory, exactly as
// Server::handle_completion runs it, for both /v1/completions and /v1/chat/completions.
// Expected refusals: ApiError (a 400 naming the field) and Error. Nested values up to the
// server's depth limit reach every field, error messages included (fuzz/seeds.sh has deep ones).
#include <memory>

#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "engine/kv_setup.h"
#include "fuzz_util.h"
#include "model/model.h"
#include "request_world.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/json_depth.h"

using namespace triattn;

namespace {
fuzz::RequestWorld g_world;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_world = fuzz::load_request_world();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The server refuses a body nested past kMaxJsonDepth on its bytes, before the JSON parser.
  if (server::json_too_deep(std::string_view(reinterpret_cast<const char*>(data), size), server::kMaxJsonDepth))
    return 0;
  const nlohmann::json body = nlohmann::json::parse(data, data + size, nullptr, false);
  if (body.is_discarded()) return 0;  // the server answers 400 before this path
  server::RequestDefaults defaults;
  defaults.max_tokens = 64;
  for (bool chat : {false, true}) {
    fuzz::expect_named_errors([&] {
      try {
        const server::CompletionRequest r = server::parse_completion_request(body, chat, *g_world.model, *g_world.chat, defaults);
        PolicyFactory factory(*g_world.model, r.kv);
        (void)factory.make();
      } catch (const server::ApiError&) {
      }
    });
  }
  return 0;
}
