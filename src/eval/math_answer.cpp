#include "eval/math_answer.h"

#include <cctype>
#include <regex>

#include "eval/boxed_answer.h"

namespace triattn::eval {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// The brace group starting at s[i] == '{': its content and the index after it.
bool brace_group(const std::string& s, size_t i, std::string& content, size_t& end) {
  if (i >= s.size() || s[i] != '{') return false;
  int depth = 0;
  for (size_t j = i; j < s.size(); ++j) {
    if (s[j] == '{') ++depth;
    else if (s[j] == '}' && --depth == 0) {
      content = s.substr(i + 1, j - i - 1);
      end = j + 1;
      return true;
    }
  }
  return false;
}

// One argument of \frac or \sqrt: a brace group or a single character.
bool argument(const std::string& s, size_t i, std::string& arg, size_t& end) {
  if (i >= s.size()) return false;
  if (s[i] == '{') return brace_group(s, i, arg, end);
  arg = s.substr(i, 1);
  end = i + 1;
  return true;
}

void unwrap(std::string& s, const std::string& cmd) {
  for (size_t at = s.find(cmd); at != std::string::npos; at = s.find(cmd, at)) {
    std::string c;
    size_t end;
    if (!brace_group(s, at + cmd.size(), c, end)) {
      ++at;
      continue;
    }
    s.replace(at, end - at, c);
  }
}

// \frac{a}{b} -> (a)/(b), \sqrt2 -> \sqrt{2}
void rewrite_commands(std::string& s) {
  for (size_t at = s.find("\\frac"); at != std::string::npos; at = s.find("\\frac", at + 1)) {
    std::string a, b;
    size_t e1, e2;
    if (!argument(s, at + 5, a, e1) || !argument(s, e1, b, e2)) continue;
    s.replace(at, e2 - at, "(" + a + ")/(" + b + ")");
  }
  for (size_t at = s.find("\\sqrt"); at != std::string::npos; at = s.find("\\sqrt", at + 1)) {
    std::string a;
    size_t e;
    if (at + 5 < s.size() && s[at + 5] != '{' && argument(s, at + 5, a, e)) s.replace(at, e - at, "\\sqrt{" + a + "}");
  }
}

struct Rational {
  __int128 num = 0, den = 1;
};

// "12", "-3.25", "1,000" (already without commas) -> exact rational.
std::optional<Rational> decimal(const std::string& s) {
  static const std::regex re(R"(^([+-]?)(\d*)(?:\.(\d*))?$)");
  std::smatch m;
  if (!std::regex_match(s, m, re) || (m[2].length() == 0 && m[3].length() == 0)) return std::nullopt;
  if (m[2].length() + m[3].length() > 30) return std::nullopt;
  Rational r;
  for (char c : m[2].str() + m[3].str()) r.num = r.num * 10 + (c - '0');
  for (size_t i = 0; i < m[3].str().size(); ++i) r.den *= 10;
  if (m[1] == "-") r.num = -r.num;
  return r;
}

std::string strip_parens(std::string s) {
  while (s.size() >= 2 && ((s.front() == '(' && s.back() == ')') || (s.front() == '{' && s.back() == '}'))) {
    // only when the outer pair matches itself
    int depth = 0;
    bool outer = true;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '(' || s[i] == '{') ++depth;
      else if ((s[i] == ')' || s[i] == '}') && --depth == 0 && i + 1 < s.size()) outer = false;
    }
    if (!outer) break;
    s = s.substr(1, s.size() - 2);
  }
  return s;
}

std::optional<Rational> rational(std::string s) {
  s = strip_parens(s);
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s = strip_parens(s.substr(1));
  }
  std::optional<Rational> r;
  const size_t slash = s.find('/');
  if (slash == std::string::npos) {
    r = decimal(s);
  } else {
    const auto a = decimal(strip_parens(s.substr(0, slash))), b = decimal(strip_parens(s.substr(slash + 1)));
    if (!a || !b || b->num == 0) return std::nullopt;
    r = Rational{a->num * b->den, a->den * b->num};
  }
  if (r && neg) r->num = -r->num;
  return r;
}

}  // namespace

std::string normalize_math_answer(const std::string& in) {
  std::string s = in;
  for (const char* noise : {"\\left", "\\right", "\\displaystyle", "\\!", "\\,", "\\;", "\\:", "\\quad", "\\qquad",
                            "$", "^\\circ", "^{\\circ}", "\\%", "%", "\\$"})
    replace_all(s, noise, "");
  replace_all(s, "\\dfrac", "\\frac");
  replace_all(s, "\\tfrac", "\\frac");
  for (const char* cmd : {"\\text", "\\textbf", "\\mathrm", "\\mathbf", "\\mbox", "\\boxed"}) unwrap(s, cmd);
  // A leading "x =" / "n=" (one variable) names the answer, it is not part of it.
  static const std::regex var(R"(^\s*[A-Za-z]\s*=\s*)");
  s = std::regex_replace(s, var, "");
  std::string compact;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
  s = compact;
  while (!s.empty() && s.back() == '.') s.pop_back();
  rewrite_commands(s);
  static const std::regex thousands(R"(^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$)");
  if (std::regex_match(s, thousands)) replace_all(s, ",", "");
  return s;
}

bool math_answers_equal(const std::string& a, const std::string& b) {
  const std::string na = normalize_math_answer(a), nb = normalize_math_answer(b);
  const auto ra = rational(na), rb = rational(nb);
  if (ra && rb) return ra->num * rb->den == rb->num * ra->den;
  return strip_parens(na) == strip_parens(nb);
}

bool math_correct(const std::string& reply, const std::string& reference) {
  const auto got = last_boxed(reply);
  return got && math_answers_equal(*got, reference);
}

}  // namespace triattn::eval
