#include "tokenizer/bpe_byte_map.h"

#include <array>

namespace triattn {
namespace {

// Bytes that GPT-2 keeps as themselves: '!'..'~', '¡'..'¬', '®'..'ÿ'.
constexpr bool kept_as_is(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 512> from_cp{};  // every mapped code point is < 0x144
  Tables() {
    from_cp.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      to_cp[b] = kept_as_is(b) ? uint32_t(b) : next++;
      from_cp[to_cp[b]] = int16_t(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t bpe_byte_to_codepoint(uint8_t b) { return tables().to_cp[b]; }

int bpe_codepoint_to_byte(uint32_t cp) {
  return cp < tables().from_cp.size() ? tables().from_cp[cp] : -1;
}

void bpe_utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

size_t bpe_utf8_decode(std::string_view s, size_t i, uint32_t* cp) {
  const auto b0 = uint8_t(s[i]);
  size_t len = 0;
  uint32_t v = 0;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, v = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, v = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, v = b0 & 0x07;
  } else {
    *cp = 0xFFFFFFFF;
    return 1;
  }
  if (i + len > s.size()) {
    *cp = 0xFFFFFFFF;
    return 1;
  }
  for (size_t k = 1; k < len; ++k) {
    const auto b = uint8_t(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      *cp = 0xFFFFFFFF;
      return 1;
    }
    v = (v << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not characters.
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
    *cp = 0xFFFFFFFF;
    return 1;
  }
  *cp = v;
  return len;
}

std::string bpe_bytes_to_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) bpe_utf8_append(out, bpe_byte_to_codepoint(uint8_t(c)));
  return out;
}

std::string bpe_text_to_bytes(std::string_view text, bool* all_mapped) {
  std::string out;
  out.reserve(text.size());
  bool ok = true;
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = bpe_utf8_decode(text, i, &cp);
    const int b = cp == 0xFFFFFFFF ? -1 : bpe_codepoint_to_byte(cp);
    if (b >= 0) {
      out += char(b);
    } else {
      out.append(text.substr(i, n));
      ok = false;
    }
    i += n;
  }
  if (all_mapped) *all_mapped = ok;
  return out;
}

}  // namespace triattn
