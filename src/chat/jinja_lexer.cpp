#include "chat/jinja_lexer.h"

#include <cstring>

#include "chat/jinja_pystr.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Jinja turns \r\n and \r into \n before lexing, and (keep_trailing_newline off) drops one
// trailing newline of the whole template.
std::string normalize_newlines(const std::string& s, bool keep_trailing) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  if (!keep_trailing && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(const std::string& source, const LexOptions& opt)
      : src_(normalize_newlines(source, opt.keep_trailing_newline)), opt_(opt) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t start = find_tag_start(pos_);
      if (start == std::string::npos) {
        emit_text(src_.substr(pos_), line_);
        advance_to(src_.size());
        break;
      }
      char kind = src_[start + 1];
      char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
      bool has_sign = sign == '-' || sign == '+';
      std::string text = src_.substr(pos_, start - pos_);
      int text_line = line_;
      apply_strip_before(text, kind, has_sign ? sign : '\0');
      emit_text(std::move(text), text_line);
      advance_to(start);
      int tag_line = line_;
      pos_ = start + 2 + (has_sign ? 1 : 0);
      if (kind == '#') {
        lex_comment(tag_line);
      } else if (kind == '%' && try_raw(tag_line)) {
        // raw block fully handled
      } else {
        lex_tag(kind == '%', tag_line);
      }
    }
    toks_.push_back({TokKind::Eof, "", line_});
    return std::move(toks_);
  }

 private:
  [[noreturn]] void error(int line, const std::string& msg) { fail("chat template line ", line, ": ", msg); }

  size_t find_tag_start(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // Moves pos_ forward, counting the newlines passed.
  void advance_to(size_t to) {
    for (size_t i = pos_; i < to && i < src_.size(); ++i) line_ += src_[i] == '\n';
    pos_ = to;
  }

  // `{%-` strips all whitespace before the tag; otherwise lstrip_blocks removes spaces and
  // tabs between the start of the line and a block or comment tag (`{%+` opts out).
  void apply_strip_before(std::string& text, char kind, char sign) {
    if (sign == '-') {
      size_t e = text.size();
      while (e > 0 && is_ws(text[e - 1])) --e;
      text.resize(e);
      return;
    }
    if (!opt_.lstrip_blocks || kind == '{' || sign == '+') return;
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting_) return;
    if (l_pos == text.size()) return;
    for (size_t i = l_pos; i < text.size(); ++i)
      if (!is_ws(text[i])) return;
    text.resize(l_pos);
  }

  void emit_text(std::string text, int line) {
    if (!text.empty()) toks_.push_back({TokKind::Text, std::move(text), line});
  }

  bool starts_with(const char* s) const { return src_.compare(pos_, std::strlen(s), s) == 0; }

  // Consumes the tail of a tag end: `-` strips all following whitespace, `+` keeps it, and a
  // plain end of a block/comment drops one newline (trim_blocks). Sets line_starting_ to
  // whether what was consumed ended in a newline (lstrip_blocks looks at it next).
  void finish_tag_end(char sign, bool block_like) {
    line_starting_ = false;
    if (sign == '-') {
      size_t e = pos_;
      while (e < src_.size() && is_ws(src_[e])) ++e;
      if (e > pos_) line_starting_ = src_[e - 1] == '\n';
      advance_to(e);
    } else if (sign != '+' && block_like && opt_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      advance_to(pos_ + 1);
      line_starting_ = true;
    }
  }

  void lex_comment(int tag_line) {
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) error(tag_line, "unclosed comment (missing '#}')");
    char sign = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
    advance_to(end + 2);
    finish_tag_end(sign, true);
  }

  // `{% raw %}...{% endraw %}` emits its body as text, untouched.
  bool try_raw(int tag_line) {
    size_t p = pos_;
    while (p < src_.size() && is_ws(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) return false;
    p += 3;
    while (p < src_.size() && is_ws(src_[p])) ++p;
    char sign = '\0';
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
    if (src_.compare(p, 2, "%}") != 0) error(tag_line, "expected '%}' after 'raw'");
    advance_to(p + 2);
    finish_tag_end(sign, true);
    // Find `{%[-+]? endraw [-+]?%}`.
    for (size_t s = src_.find("{%", pos_); s != std::string::npos; s = src_.find("{%", s + 2)) {
      size_t q = s + 2;
      char open_sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : '\0';
      if (open_sign) ++q;
      while (q < src_.size() && is_ws(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < src_.size() && is_ws(src_[q])) ++q;
      char end_sign = '\0';
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) end_sign = src_[q++];
      if (src_.compare(q, 2, "%}") != 0) error(line_, "expected '%}' after 'endraw'");
      std::string body = src_.substr(pos_, s - pos_);
      int body_line = line_;
      apply_strip_before(body, '%', open_sign);
      emit_text(std::move(body), body_line);
      advance_to(q + 2);
      finish_tag_end(end_sign, true);
      return true;
    }
    error(tag_line, "unclosed raw block (missing 'endraw')");
  }

  void lex_tag(bool is_block, int tag_line) {
    toks_.push_back({is_block ? TokKind::BlockBegin : TokKind::VarBegin, "", tag_line});
    std::string stack;  // open brackets: `}}` inside a dict literal does not end the tag
    while (true) {
      while (pos_ < src_.size() && is_ws(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size())
        error(tag_line, is_block ? "unclosed block tag (missing '%}')" : "unclosed expression (missing '}}')");
      if (stack.empty()) {
        const char* close = is_block ? "%}" : "}}";
        char sign = '\0';
        size_t len = 0;
        if ((src_[pos_] == '-' || (is_block && src_[pos_] == '+')) && src_.compare(pos_ + 1, 2, close) == 0) {
          sign = src_[pos_];
          len = 3;
        } else if (src_.compare(pos_, 2, close) == 0) {
          len = 2;
        }
        if (len) {
          int end_line = line_;
          advance_to(pos_ + len);
          finish_tag_end(sign, is_block);
          toks_.push_back({is_block ? TokKind::BlockEnd : TokKind::VarEnd, "", end_line});
          return;
        }
      }
      char c = src_[pos_];
      if (is_name_start(c)) {
        size_t e = pos_;
        while (e < src_.size() && is_name_char(src_[e])) ++e;
        toks_.push_back({TokKind::Name, src_.substr(pos_, e - pos_), line_});
        pos_ = e;
      } else if (is_digit(c)) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string();
      } else {
        lex_operator(stack);
      }
    }
  }

  void lex_number() {
    bool after_dot = !toks_.empty() && toks_.back().kind == TokKind::Op && toks_.back().text == ".";
    auto digits = [&](size_t p) {
      while (p < src_.size() && (is_digit(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1]))))
        ++p;
      return p;
    };
    size_t e = digits(pos_);
    bool is_float = false;
    if (!after_dot) {
      if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
        e = digits(e + 1);
        is_float = true;
      }
      if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
        size_t p = e + 1;
        if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
        if (p < src_.size() && is_digit(src_[p])) {
          e = digits(p);
          is_float = true;
        }
      }
    }
    std::string text;
    for (size_t i = pos_; i < e; ++i)
      if (src_[i] != '_') text.push_back(src_[i]);
    toks_.push_back({is_float ? TokKind::Float : TokKind::Int, text, line_});
    pos_ = e;
  }

  void lex_string() {
    char q = src_[pos_];
    int start_line = line_;
    std::string out;
    size_t p = pos_ + 1;
    while (true) {
      if (p >= src_.size()) error(start_line, "unterminated string literal");
      char c = src_[p];
      if (c == q) break;
      if (c != '\\') {
        out.push_back(c);
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) error(start_line, "unterminated string literal");
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case '\n': break;  // backslash-newline continues the line
        case 'x':
        case 'u':
        case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          char32_t cp = 0;
          for (int k = 0; k < n; ++k) {
            int h = p + k < src_.size() ? hex_value(src_[p + k]) : -1;
            if (h < 0) error(start_line, std::string("malformed \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<char32_t>(h);
          }
          if (cp > 0x10FFFF) error(start_line, "escape outside the Unicode range in string literal");
          p += static_cast<size_t>(n);
          out += pystr::encode(std::u32string(1, cp));
          break;
        }
        default:
          if (e >= '0' && e <= '7') {  // octal, up to three digits
            char32_t cp = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k, ++p)
              cp = cp * 8 + static_cast<char32_t>(src_[p] - '0');
            out += pystr::encode(std::u32string(1, cp));
          } else {  // Python keeps unknown escapes verbatim
            out.push_back('\\');
            out.push_back(e);
          }
      }
    }
    toks_.push_back({TokKind::String, std::move(out), start_line});
    advance_to(p + 1);
  }

  void lex_operator(std::string& stack) {
    static const char* two[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : two)
      if (starts_with(op)) {
        toks_.push_back({TokKind::Op, op, line_});
        pos_ += 2;
        return;
      }
    char c = src_[pos_];
    if (!std::strchr("+-*/%~()[]{},.:|=<>;", c))
      error(line_, std::string("unexpected character '") + c + "' in tag");
    if (c == '(' || c == '[' || c == '{') stack.push_back(c);
    if (c == ')' || c == ']' || c == '}') {
      char want = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (stack.empty() || stack.back() != want) error(line_, std::string("unexpected '") + c + "'");
      stack.pop_back();
    }
    toks_.push_back({TokKind::Op, std::string(1, c), line_});
    ++pos_;
  }

  std::string src_;
  LexOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> toks_;
};

}  // namespace

std::vector<Token> lex(const std::string& source, const LexOptions& opt) { return Lexer(source, opt).run(); }

}  // namespace triattn::jinja
