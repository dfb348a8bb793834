#include "tokenizer/utf8.h"

#include <cstdint>

namespace triattn {

namespace {

// Valid range of the second byte for each lead byte (Unicode Table 3-7); later
// continuation bytes are always 80..BF.
bool second_byte_ok(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;  // no overlong 3-byte forms
    case 0xED: return b >= 0x80 && b <= 0x9F;  // no UTF-16 surrogates
    case 0xF0: return b >= 0x90 && b <= 0xBF;  // no overlong 4-byte forms
    case 0xF4: return b >= 0x80 && b <= 0x8F;  // nothing above U+10FFFF
    default: return b >= 0x80 && b <= 0xBF;
  }
}

size_t sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // continuation byte, C0/C1 or F5..FF: never a valid lead
}

}  // namespace

Utf8Step utf8_step(std::string_view s, size_t pos) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  const size_t need = sequence_length(lead);
  if (need == 0) return {Utf8Scan::Invalid, 1};
  for (size_t i = 1; i < need; ++i) {
    if (pos + i >= s.size()) return {Utf8Scan::Incomplete, i};
    const auto b = static_cast<uint8_t>(s[pos + i]);
    const bool ok = i == 1 ? second_byte_ok(lead, b) : (b >= 0x80 && b <= 0xBF);
    // The bytes accepted so far form the maximal subpart that gets one U+FFFD.
    if (!ok) return {Utf8Scan::Invalid, i};
  }
  return {Utf8Scan::Complete, need};
}

std::string utf8_sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8Step st = utf8_step(s, pos);
    if (st.kind == Utf8Scan::Complete) {
      out.append(s.substr(pos, st.len));
    } else {
      out.append(kReplacementChar);
    }
    pos += st.len;
  }
  return out;
}

std::vector<std::string_view> utf8_split_chars(std::string_view s) {
  std::vector<std::string_view> chars;
  chars.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8Step st = utf8_step(s, pos);
    const size_t len = st.kind == Utf8Scan::Complete ? st.len : 1;
    chars.push_back(s.substr(pos, len));
    pos += len;
  }
  return chars;
}

}  // namespace triattn
