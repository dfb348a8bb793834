#include "grammar/gbnf.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "grammar/utf8_ranges.h"

namespace triattn::grammar {

namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  Grammar run(std::string_view root) {
    skip();
    if (at_end()) error("the grammar is empty (it needs at least a 'root ::= ...' rule)");
    while (!at_end()) {
      const std::string name = ident();
      if (name.empty()) error("expected a rule name");
      skip();
      if (t_.substr(pos_, 3) != "::=") error("expected '::=' after the rule name '" + name + "'");
      pos_ += 3;
      const uint32_t r = b_.rule(name);
      if (b_.defined(r)) error("rule '" + name + "' is defined twice");
      alternatives(r, name, /*nested=*/false);
      skip();
    }
    return b_.finish(std::string(root));
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < t_.size(); ++i) {
      if (t_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    fail("grammar: line ", line, " column ", col, ": ", what);
  }
  bool at_end() const { return pos_ >= t_.size(); }
  char peek() const { return at_end() ? '\0' : t_[pos_]; }
  // Spaces, newlines and # comments.
  void skip() {
    while (!at_end()) {
      const char c = t_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && t_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  std::string ident() {
    const size_t start = pos_;
    while (!at_end() && name_char(t_[pos_])) ++pos_;
    return std::string(t_.substr(start, pos_ - start));
  }
  // Is a rule definition (name ::=) next? Then the current rule ended.
  bool definition_next() {
    const size_t save = pos_;
    ident();
    skip();
    const bool yes = pos_ != save && t_.substr(pos_, 3) == "::=";
    pos_ = save;
    return yes;
  }

  void alternatives(uint32_t r, const std::string& name, bool nested) {
    for (;;) {
      b_.add_alternative(r, sequence(name, nested));
      skip();
      if (peek() != '|') break;
      ++pos_;
    }
    if (nested) {
      if (peek() != ')') error("expected ')'");
      ++pos_;
    }
  }

  std::vector<Element> sequence(const std::string& name, bool nested) {
    std::vector<Element> seq;
    size_t last = 0;  // where the last element's elements start (for a postfix)
    for (;;) {
      skip();
      if (at_end()) break;
      const char c = peek();
      if (c == '|' || c == ')') break;
      if (name_char(c) && definition_next()) {
        if (nested) error("missing ')' before the next rule");
        break;
      }
      if (b_.size() + seq.size() > kMaxElements) error("the grammar is too large");
      if (c == '"') {
        ++pos_;
        last = seq.size();
        std::string bytes;
        while (peek() != '"') {
          if (at_end()) error("unterminated string literal");
          append_utf8(bytes, char_or_escape());
        }
        ++pos_;
        if (bytes.empty()) {  // "" matches nothing: an empty group keeps postfixes meaningful
          const uint32_t e = b_.fresh(name);
          b_.add_alternative(e, {});
          seq.push_back(GrammarBuilder::ref(e));
        }
        for (unsigned char b : bytes) {
          ByteSet s;
          s.add(b);
          seq.push_back(b_.term(s));
        }
        // A postfix after a literal applies to the whole literal.
        if (bytes.size() > 1 && postfix_next()) {
          const uint32_t g = b_.fresh(name);
          b_.add_alternative(g, std::vector<Element>(seq.begin() + static_cast<long>(last), seq.end()));
          seq.resize(last);
          seq.push_back(GrammarBuilder::ref(g));
        }
      } else if (c == '[') {
        ++pos_;
        last = seq.size();
        seq.push_back(char_class(name));
      } else if (c == '.') {
        ++pos_;
        last = seq.size();
        seq.push_back(lower_class({{0, 0x10FFFF}}, name));
      } else if (c == '(') {
        ++pos_;
        last = seq.size();
        if (++depth_ > kMaxNesting) error("groups nest deeper than " + std::to_string(kMaxNesting) + " levels");
        const uint32_t g = b_.fresh(name);
        alternatives(g, name, /*nested=*/true);
        --depth_;
        seq.push_back(GrammarBuilder::ref(g));
      } else if (name_char(c)) {
        last = seq.size();
        seq.push_back(GrammarBuilder::ref(b_.rule(ident())));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (seq.empty()) error(std::string("'") + c + "' follows nothing");
        repeat(seq, last, name);
      } else {
        error(std::string("unexpected character '") + c + "'");
      }
    }
    return seq;
  }

  bool postfix_next() {
    const size_t save = pos_;
    skip();
    const char c = peek();
    pos_ = save;
    return c == '*' || c == '+' || c == '?' || c == '{';
  }

  uint32_t number() {
    skip();
    if (!(peek() >= '0' && peek() <= '9')) error("expected a number in {m,n}");
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      if (v > kMaxRepeat) error("a repetition count is more than " + std::to_string(kMaxRepeat));
      ++pos_;
    }
    skip();
    return static_cast<uint32_t>(v);
  }

  // Replaces seq[last] (one element) by its repetition.
  void repeat(std::vector<Element>& seq, size_t last, const std::string& name) {
    if (seq.size() != last + 1) error("a postfix must follow one element");
    const Element x = seq.back();
    seq.pop_back();
    const char c = peek();
    ++pos_;
    uint32_t lo = 0, hi = 0;
    bool unbounded = false;
    if (c == '*') {
      unbounded = true;
    } else if (c == '+') {
      lo = 1;
      unbounded = true;
    } else if (c == '?') {
      hi = 1;
    } else {
      lo = hi = number();
      if (peek() == ',') {
        ++pos_;
        skip();
        if (peek() == '}') {
          unbounded = true;
        } else {
          hi = number();
          if (hi < lo) error("{m,n} needs m <= n");
        }
      }
      if (peek() != '}') error("expected '}'");
      ++pos_;
    }
    if (b_.size() + seq.size() + 4 * static_cast<size_t>(std::max(lo, hi)) > kMaxElements)
      error("the grammar is too large");
    for (uint32_t i = 0; i < lo; ++i) seq.push_back(x);
    if (unbounded) {  // R ::= x R | ε (tail recursion: the recognizer's stack stays flat)
      const uint32_t r = b_.fresh(name);
      b_.add_alternative(r, {x, GrammarBuilder::ref(r)});
      b_.add_alternative(r, {});
      seq.push_back(GrammarBuilder::ref(r));
    } else if (hi > lo) {  // O_1 ::= x | ε, O_k ::= x O_{k-1} | ε
      uint32_t prev = 0;
      for (uint32_t k = 1; k <= hi - lo; ++k) {
        const uint32_t o = b_.fresh(name);
        if (k == 1)
          b_.add_alternative(o, {x});
        else
          b_.add_alternative(o, {x, GrammarBuilder::ref(prev)});
        b_.add_alternative(o, {});
        prev = o;
      }
      seq.push_back(GrammarBuilder::ref(prev));
    }
    if (lo == 0 && hi == 0 && !unbounded) {  // x{0}: matches nothing
      const uint32_t e = b_.fresh(name);
      b_.add_alternative(e, {});
      seq.push_back(GrammarBuilder::ref(e));
    }
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) error("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return v;
  }

  // One character of a literal or class, as a code point (UTF-8 decoded).
  uint32_t char_or_escape() {
    const unsigned char c = static_cast<unsigned char>(peek());
    ++pos_;
    if (c == '\\') {
      if (at_end()) error("a '\\' ends the grammar");
      const char e = peek();
      ++pos_;
      uint32_t cp = 0;
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '0': return 0;
        case '\\': case '"': case '[': case ']': case '-': case '^': case '\'': return static_cast<uint8_t>(e);
        case 'x': cp = hex(2); break;
        case 'u': cp = hex(4); break;
        case 'U': cp = hex(8); break;
        default: error(std::string("unknown escape '\\") + e + "'");
      }
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) error("the escape is not a Unicode scalar value");
      return cp;
    }
    if (c < 0x80) return c;
    // A UTF-8 sequence in the grammar text itself.
    const int n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
    if (n < 0) error("the grammar text is not valid UTF-8");
    uint32_t cp = c & (0x3F >> n);
    for (int i = 0; i < n; ++i) {
      const unsigned char k = static_cast<unsigned char>(peek());
      if ((k & 0xC0) != 0x80) error("the grammar text is not valid UTF-8");
      cp = (cp << 6) | (k & 0x3F);
      ++pos_;
    }
    return cp;
  }

  Element char_class(const std::string& name) {
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    while (peek() != ']') {
      if (at_end()) error("unterminated character class");
      const uint32_t lo = char_or_escape();
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < t_.size() && t_[pos_ + 1] != ']') {
        ++pos_;
        hi = char_or_escape();
        if (hi < lo) error("a range in a character class goes backwards");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    if (negated) ranges = complement(ranges);
    if (ranges.empty()) error("the character class matches nothing");
    return lower_class(ranges, name);
  }

  // A class of code points as terminals: one byte set for its ASCII part, and a rule of
  // byte sequences when it reaches past ASCII.
  Element lower_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, const std::string& name) {
    ByteSet ascii;
    std::vector<BytePattern> wide;
    for (auto [a, b] : ranges) {
      if (a < 0x80) ascii.add_range(static_cast<uint8_t>(a), static_cast<uint8_t>(std::min<uint32_t>(b, 0x7F)));
      if (b >= 0x80)
        for (BytePattern& p : utf8_patterns(std::max<uint32_t>(a, 0x80), b)) wide.push_back(std::move(p));
    }
    if (wide.empty()) return b_.term(ascii);
    const uint32_t r = b_.fresh(name);
    if (!ascii.empty()) b_.add_alternative(r, {b_.term(ascii)});
    for (const BytePattern& p : wide) {
      std::vector<Element> seq;
      for (auto [lo, hi] : p) {
        ByteSet s;
        s.add_range(lo, hi);
        seq.push_back(b_.term(s));
      }
      b_.add_alternative(r, seq);
    }
    return GrammarBuilder::ref(r);
  }

  static constexpr int kMaxNesting = 200;  // parsing recurses per group
  std::string_view t_;
  size_t pos_ = 0;
  int depth_ = 0;
  GrammarBuilder b_;
};

}  // namespace

Grammar parse_gbnf(std::string_view text, std::string_view root) { return Parser(text).run(root); }

}  // namespace triattn::grammar
