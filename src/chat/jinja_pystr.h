#pragma once
// Python str semantics on UTF-8 std::string. Templates index, slice and measure strings in
// code points (Python), not bytes, and strip Python's notion of whitespace.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace triattn::jinja::pystr {

std::u32string decode(std::string_view s);  // invalid bytes map to U+FFFD
std::string encode(std::u32string_view s);
size_t length(std::string_view s);           // code points

bool is_space(char32_t c);  // str.isspace()

// chars == nullopt: strip whitespace; otherwise strip any code point in *chars.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep, maxsplit); sep == nullopt splits on whitespace runs.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
int64_t count(std::string_view s, std::string_view sub);
int64_t find(std::string_view s, std::string_view sub);  // code point index or -1

// Case mapping covers ASCII and Latin-1 letters only (chat templates use it on role names).
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);
std::string capitalize(std::string_view s);

std::string repr(std::string_view s);  // Python repr of a str, quotes included
std::string float_repr(double d);      // Python repr of a float ("1.0", "1e+16", "inf")

}  // namespace triattn::jinja::pystr
