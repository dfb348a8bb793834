#include "cli/escape_bytes.h"

#include <cstdio>

#include "tokenizer/utf8.h"

namespace triattn::cli {

namespace {
void append_hex(std::string& out, unsigned char c) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "\\x%02X", c);
  out += buf;
}
}  // namespace

std::string escape_bytes(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // A byte token can hold part of a character: only complete characters pass through.
      const Utf8Step step = utf8_step(s, i);
      if (step.kind == Utf8Scan::Complete) {
        out.append(s.substr(i, step.len));
        i += step.len;
      } else {
        append_hex(out, c);
        ++i;
      }
      continue;
    }
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          append_hex(out, c);
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return out;
}

}  // namespace triattn::cli
