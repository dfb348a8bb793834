// The server's front door on raw bytes: the HTTP/1.1 request parser (request line, headers,
// Content-Length and chunked framing, pipelined requests) fed in pieces whose sizes come from
// the input, then each complete request's body down the completion path exactly as the
// server runs it: the nesting check on the bytes, the JSON parser, the request's fields.
// Expected ends: a parser error with a status, an ApiError, an Error; nothing else.
#include <memory>

#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "fuzz_util.h"
#include "model/model.h"
#include "request_world.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/http/request_parser.h"
#include "server/json_depth.h"

using namespace triattn;

namespace {
fuzz::RequestWorld g_world;

void body_path(const std::string& body, bool chat) {
  if (server::json_too_deep(body, server::kMaxJsonDepth)) return;  // a 400 before any parsing
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) return;
  server::RequestDefaults defaults;
  defaults.max_tokens = 16;
  fuzz::expect_named_errors([&] {
    try {
      (void)server::parse_completion_request(j, chat, *g_world.model, *g_world.chat, defaults);
    } catch (const server::ApiError&) {
    }
  });
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_world = fuzz::load_request_world();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The first byte sets the piece size (1..64 bytes, or all at once), as a socket would
  // deliver the rest.
  const size_t piece = data[0] % 65 == 0 ? size : data[0] % 65;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  http::Limits limits;
  limits.max_head_bytes = 4096;
  limits.max_headers = 32;
  limits.max_body_bytes = 8192;
  http::RequestParser parser(limits);
  while (!in.empty()) {
    const std::string_view chunk = in.substr(0, piece);
    size_t used = 0;
    while (used < chunk.size()) {
      const size_t n = parser.consume(chunk.substr(used));
      used += n;
      if (parser.failed()) {
        if (parser.error_status() < 400 || parser.error_status() > 505 || parser.error().empty()) std::abort();
        return 0;
      }
      if (parser.complete()) {
        const http::Request r = parser.take();
        if (r.body.size() > limits.max_body_bytes) std::abort();
        if (!r.body.empty()) body_path(r.body, r.path.find("chat") != std::string::npos);
      } else if (n == 0) {
        std::abort();  // neither progress nor an end
      }
    }
    in.remove_prefix(chunk.size());
  }
  return 0;
}
