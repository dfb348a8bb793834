#pragma once
// Shows arbitrary bytes (token pieces, partial UTF-8) on one terminal line.
#include <string>
#include <string_view>

namespace triattn::cli {

// Well-formed UTF-8 characters stay as they are; \ and ' get a backslash; \n \r \t are
// written as such; other control bytes, DEL and bytes outside well-formed UTF-8 become \xNN.
std::string escape_bytes(std::string_view bytes);

}  // namespace triattn::cli
