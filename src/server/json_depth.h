#pragma once
// How deep a JSON text nests, read from its bytes without parsing: the server refuses a body
// nested past kMaxJsonDepth before the JSON parser, a recursive conversion or the text of an
// error message walks it (a body of 100,000 '[' overflowed the stack there). Strings are
// skipped with their escapes, so brackets inside them do not count.
#include <cstddef>
#include <optional>
#include <string_view>

namespace triattn::server {

// Deep enough for any request the API defines (chat messages with content parts and template
// arguments are under 10 levels), shallow enough for every recursive walk.
inline constexpr int kMaxJsonDepth = 64;

// The offset of the first '[' or '{' that opens level max_depth + 1, or nothing.
std::optional<size_t> json_too_deep(std::string_view text, int max_depth);

}  // namespace triattn::server
