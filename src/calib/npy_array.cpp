#include "calib/npy_array.h"

#include <cctype>
#include <charconv>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/half.h"

namespace triattn {

namespace {

// The header dict: a flat Python literal, parsed strictly (keys and values as numpy writes them).
class HeaderParser {
 public:
  HeaderParser(std::string_view s, const std::string& where) : s_(s), where_(where) {}
  void parse(NpyArray& a) {
    bool descr = false, order = false, shape = false;
    expect('{');
    while (!eat('}')) {
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        a.descr = quoted();
        descr = true;
      } else if (key == "fortran_order") {
        if (word() != "False") fail(where_, ": a Fortran-order array (only C order is read)");
        order = true;
      } else if (key == "shape") {
        a.shape = tuple();
        shape = true;
      } else {
        fail(where_, ": .npy header has an unknown key '", key, "'");
      }
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    skip();
    if (at_ != s_.size()) fail(where_, ": .npy header has text after its dict");
    if (!descr || !order || !shape) fail(where_, ": .npy header lacks 'descr', 'fortran_order' or 'shape'");
  }

 private:
  void skip() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n')) ++at_;
  }
  bool eat(char c) {
    skip();
    if (at_ < s_.size() && s_[at_] == c) return ++at_, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(where_, ": malformed .npy header (expected '", std::string(1, c), "' at character ", at_, ")");
  }
  std::string quoted() {
    skip();
    if (at_ >= s_.size() || (s_[at_] != '\'' && s_[at_] != '"')) expect('\'');
    const char q = s_[at_++];
    const size_t end = s_.find(q, at_);
    if (end == std::string_view::npos) fail(where_, ": malformed .npy header (unterminated string)");
    std::string v(s_.substr(at_, end - at_));
    at_ = end + 1;
    return v;
  }
  std::string word() {
    skip();
    const size_t start = at_;
    while (at_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[at_]))) ++at_;
    return std::string(s_.substr(start, at_ - start));
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> v;
    expect('(');
    while (!eat(')')) {
      skip();
      int64_t n = -1;
      const auto [p, ec] = std::from_chars(s_.data() + at_, s_.data() + s_.size(), n);
      if (ec != std::errc() || n < 0) fail(where_, ": malformed .npy shape (a dimension is not a count)");
      at_ = static_cast<size_t>(p - s_.data());
      v.push_back(n);
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return v;
  }
  std::string_view s_;
  size_t at_ = 0;
  const std::string& where_;
};

size_t item_size(const std::string& descr, const std::string& where) {
  if (descr == "<f4") return 4;
  if (descr == "<f2") return 2;
  if (descr == "<f8") return 8;
  if (descr == "|b1") return 1;
  if (descr.starts_with("<U")) {
    int n = 0;
    const auto [p, ec] = std::from_chars(descr.data() + 2, descr.data() + descr.size(), n);
    if (ec == std::errc() && p == descr.data() + descr.size() && n > 0 && n < (1 << 20)) return 4 * static_cast<size_t>(n);
  }
  fail(where, ": array of type '", descr, "' (statistics are little-endian floats)");
}

}  // namespace

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

NpyArray parse_npy(std::span<const uint8_t> b, const std::string& where) {
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0) fail(where, ": not a .npy array (no \\x93NUMPY magic)");
  const uint8_t major = b[6];
  size_t hlen = 0, start = 0;
  if (major == 1) {
    hlen = b[8] | b[9] << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) fail(where, ": truncated .npy header");
    hlen = b[8] | b[9] << 8 | b[10] << 16 | static_cast<size_t>(b[11]) << 24;
    start = 12;
  } else {
    fail(where, ": .npy format version ", int(major), " is not supported (1, 2 and 3 are)");
  }
  if (hlen > b.size() - start) fail(where, ": .npy header of ", hlen, " bytes runs past the end of the entry");
  NpyArray a;
  HeaderParser(std::string_view(reinterpret_cast<const char*>(b.data()) + start, hlen), where).parse(a);
  const size_t item = item_size(a.descr, where);
  // Bounded dims first, so the product cannot overflow.
  int64_t n = 1;
  for (int64_t d : a.shape) {
    if (d > (int64_t{1} << 40) || (d > 0 && n > (int64_t{1} << 40) / d)) fail(where, ": .npy shape too large");
    n *= d;
  }
  const size_t data_at = start + hlen, want = static_cast<size_t>(n) * item;
  if (b.size() - data_at != want)
    fail(where, ": .npy data holds ", b.size() - data_at, " bytes, its shape and type need ", want);
  a.data = b.subspan(data_at);
  return a;
}

std::vector<float> npy_floats(const NpyArray& a, const std::string& where) {
  const size_t n = static_cast<size_t>(a.numel());
  std::vector<float> out(n);
  const uint8_t* p = a.data.data();
  if (a.descr == "<f4") {
    std::memcpy(out.data(), p, 4 * n);
  } else if (a.descr == "<f2") {
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = f16_to_f32(h);
    }
  } else if (a.descr == "<f8") {
    for (size_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      out[i] = static_cast<float>(d);
    }
  } else {
    fail(where, ": array of type '", a.descr, "', expected floats");
  }
  return out;
}

std::vector<uint8_t> npy_f32_bytes(std::span<const float> v) {
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(v.size()) + ",), }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  const uint8_t magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(h.size() & 0xFF),
                             static_cast<uint8_t>(h.size() >> 8)};
  std::vector<uint8_t> out(sizeof magic + h.size() + v.size() * sizeof(float));
  std::memcpy(out.data(), magic, sizeof magic);
  std::memcpy(out.data() + sizeof magic, h.data(), h.size());
  if (!v.empty()) std::memcpy(out.data() + sizeof magic + h.size(), v.data(), v.size() * sizeof(float));
  return out;
}

}  // namespace triattn
