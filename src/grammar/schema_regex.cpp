// The `pattern` subset: a regular expression as a GBNF expression over the bytes between a
// JSON string's quotes. A character the regex names is written as JSON spells it ("\"" for
// a quote); a class keeps only characters that need no escape in JSON, and `.` those and
// the short escapes of characters other than line terminators (dropping the others narrows
// what is generated, never widens it).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>
#include <vector>

#include "core/error.h"
#include "grammar/schema_parts.h"
#include "grammar/utf8_ranges.h"

namespace triattn::grammar {

namespace {

using Ranges = CodePointRanges;

// Without the characters JSON must escape: '"', '\\' and the controls below 0x20.
Ranges json_plain(const Ranges& r) {
  Ranges out;
  const Ranges banned = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  for (auto [a, b] : r) {
    uint32_t lo = a;
    for (auto [x, y] : banned) {
      if (y < lo || x > b) continue;
      if (x > lo) out.push_back({lo, x - 1});
      lo = std::max(lo, y + 1);
    }
    if (lo <= b) out.push_back({lo, b});
  }
  return out;
}

std::string class_char(uint32_t c) {
  char buf[16];
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return std::string(1, static_cast<char>(c));
  if (c < 0x80) std::snprintf(buf, sizeof buf, "\\x%02X", c);
  else if (c < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04X", c);
  else std::snprintf(buf, sizeof buf, "\\U%08X", c);
  return buf;
}

std::string json_char(uint32_t c) {
  std::string s;
  if (c == '"') s = "\\\"";
  else if (c == '\\') s = "\\\\";
  else if (c == '\n') s = "\\n";
  else if (c == '\t') s = "\\t";
  else if (c == '\r') s = "\\r";
  else if (c < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", c);
    s = buf;
  } else {
    append_utf8(s, c);
  }
  return s;
}

class Regex {
 public:
  Regex(const std::string& p, const std::string& any) : p_(p), any_(any) {}

  std::string run() {
    bool start = false, end = false;
    if (!p_.empty() && p_[0] == '^') {
      start = true;
      ++pos_;
    }
    size_t stop = p_.size();
    if (stop > pos_ && p_[stop - 1] == '$') {
      size_t slashes = 0;
      for (size_t i = stop - 1; i > pos_ && p_[i - 1] == '\\'; --i) ++slashes;
      if (slashes % 2 == 0) {
        end = true;
        --stop;
      }
    }
    end_ = stop;
    int branches = 0;
    std::string body = alternation(&branches);
    if (pos_ != end_) bad("unbalanced ')'");
    if (branches > 1 && (start || end)) bad("anchors around a top-level '|' (wrap the alternatives in a group)");
    std::string out;
    if (!start) out += any_ + "* ";
    out += "(" + body + ")";
    if (!end) out += " " + any_ + "*";
    return out;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail("pattern '", p_, "': ", what, " is not supported");
  }
  bool more() const { return pos_ < end_; }
  char peek() const { return more() ? p_[pos_] : '\0'; }

  uint32_t utf8_char() {
    const unsigned char c = static_cast<unsigned char>(p_[pos_++]);
    if (c < 0x80) return c;
    const int n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
    uint32_t cp = c & (0x3F >> n);
    for (int i = 0; i < n && more(); ++i) cp = (cp << 6) | (static_cast<unsigned char>(p_[pos_++]) & 0x3F);
    return cp;
  }

  std::string alternation(int* branches) {
    std::string out = sequence();
    *branches = 1;
    while (peek() == '|') {
      ++pos_;
      out += " | " + sequence();
      ++*branches;
    }
    return out;
  }

  std::string sequence() {
    std::string out = "\"\"";
    while (more() && peek() != '|' && peek() != ')') {
      std::string atom_text = atom();
      out += " " + quantifier(atom_text);
    }
    return out;
  }

  std::string quantifier(const std::string& a) {
    std::string q;
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      q = std::string(1, c);
    } else if (c == '{') {
      const size_t close = p_.find('}', pos_);
      if (close == std::string::npos || close >= end_) bad("an unterminated '{'");
      q = p_.substr(pos_, close - pos_ + 1);
      // {m}, {m,} or {m,n} with m <= n; ECMA-262 reads anything else ("{,n}") as literal text.
      const std::string inner = q.substr(1, q.size() - 2);
      const size_t comma = inner.find(',');
      const std::string m = inner.substr(0, comma), n = comma == std::string::npos ? m : inner.substr(comma + 1);
      auto digits = [](const std::string& x) {
        return x.size() <= 5 && std::all_of(x.begin(), x.end(), [](char k) { return k >= '0' && k <= '9'; });
      };
      if (m.empty() || !digits(m) || !digits(n) || (!n.empty() && std::stoi(n) < std::stoi(m)))
        bad("the quantifier " + q);
      pos_ = close + 1;
    } else {
      return a;
    }
    if (peek() == '?') ++pos_;  // lazy: the same language
    if (peek() == '*' || peek() == '+' || peek() == '{') bad("a quantifier after a quantifier");
    return "(" + a + ")" + q;
  }

  std::string cls(const Ranges& r) {
    const Ranges plain = json_plain(r);
    if (plain.empty()) bad("a class of only characters JSON must escape");
    std::string s = "[";
    for (auto [a, b] : plain) s += a == b ? class_char(a) : class_char(a) + "-" + class_char(b);
    return s + "]";
  }

  // \d \w \s and negations; false when e is none of them.
  static bool shorthand(char e, Ranges& r) {
    // ECMA-262's white space and line terminators, not only ASCII's: \S must not take U+00A0.
    Ranges d = {{'0', '9'}}, w = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}},
           s = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
                {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
    switch (e) {
      case 'd': r = d; return true;
      case 'w': r = w; return true;
      case 's': r = s; return true;
      case 'D': r = complement(d); return true;
      case 'W': r = complement(w); return true;
      case 'S': r = complement(s); return true;
      default: return false;
    }
  }

  uint32_t escaped_char(char e) {
    switch (e) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0': return 0;
      case 'u': {
        if (pos_ + 4 > end_ || !std::all_of(p_.begin() + static_cast<long>(pos_), p_.begin() + static_cast<long>(pos_) + 4,
                                            [](char k) { return std::isxdigit(static_cast<unsigned char>(k)) != 0; }))
          bad("a \\u escape without 4 hex digits");
        const uint32_t v = static_cast<uint32_t>(std::stoul(p_.substr(pos_, 4), nullptr, 16));
        pos_ += 4;
        return v;
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
          bad(std::string("the escape \\") + e);
        return static_cast<uint8_t>(e);
    }
  }

  std::string atom() {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      if (peek() == '?') {
        if (p_.compare(pos_, 2, "?:") != 0) bad("the group '(" + p_.substr(pos_, 3) + "' (lookaround, named groups)");
        pos_ += 2;
      }
      int branches = 0;
      std::string inner = alternation(&branches);
      if (peek() != ')') bad("an unclosed '('");
      ++pos_;
      return "(" + inner + ")";
    }
    if (c == '[') {
      ++pos_;
      bool neg = false;
      if (peek() == '^') {
        neg = true;
        ++pos_;
      }
      // ECMA-262's [] matches nothing and [^] anything (not a ']' that opens the class).
      if (peek() == ']') bad(neg ? "the class [^]" : "the empty class []");
      Ranges r;
      while (more() && peek() != ']') {
        uint32_t lo;
        if (peek() == '\\') {
          ++pos_;
          if (!more()) bad("a trailing '\\'");
          const char e = p_[pos_++];
          Ranges sh;
          if (shorthand(e, sh)) {
            r.insert(r.end(), sh.begin(), sh.end());
            continue;
          }
          lo = escaped_char(e);
        } else {
          lo = utf8_char();
        }
        uint32_t hi = lo;
        if (peek() == '-' && pos_ + 1 < end_ && p_[pos_ + 1] != ']') {
          ++pos_;
          if (peek() == '\\') {
            ++pos_;
            hi = escaped_char(p_[pos_++]);
          } else {
            hi = utf8_char();
          }
          if (hi < lo) bad("a backwards range");
        }
        r.push_back({lo, hi});
      }
      if (peek() != ']') bad("an unclosed '['");
      ++pos_;
      return cls(neg ? complement(r) : r);
    }
    if (c == '.') {  // any character but a line terminator, plain or as a short escape
      ++pos_;
      return "(" + cls(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})) + R"( | "\\" ["\\/bft]))";
    }
    if (c == '^' || c == '$') bad(std::string("the anchor '") + c + "' inside the pattern");
    if (c == '*' || c == '+' || c == '?' || c == '{') bad(std::string("'") + c + "' after nothing");
    if (c == '\\') {
      ++pos_;
      if (!more()) bad("a trailing '\\'");
      const char e = p_[pos_++];
      Ranges sh;
      if (shorthand(e, sh)) return cls(sh);
      if (e == 'b' || e == 'B') bad("the word boundary \\b");
      if (e >= '1' && e <= '9') bad("a back-reference");
      return gbnf_literal(json_char(escaped_char(e)));
    }
    return gbnf_literal(json_char(utf8_char()));
  }

  const std::string& p_;
  std::string any_;
  size_t pos_ = 0, end_ = 0;
};

}  // namespace

std::string gbnf_literal(const std::string& bytes) {
  std::string s = "\"";
  for (unsigned char c : bytes) {
    if (c == '"') s += "\\\"";
    else if (c == '\\') s += "\\\\";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      s += buf;
    } else {
      s += static_cast<char>(c);  // UTF-8 passes through: the GBNF parser decodes it back
    }
  }
  return s + "\"";
}

std::string regex_to_gbnf(const std::string& pattern, const std::string& any_char) {
  return Regex(pattern, any_char).run();
}

}  // namespace triattn::grammar
