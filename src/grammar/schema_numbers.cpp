// Numeric bounds as digit grammars: a range of whole numbers is split by digit count, then
// at the first digit where its ends differ (the usual regex construction), so the grammar
// accepts exactly the numbers in range, written without leading zeros.
#include <string>
#include <vector>

#include "core/error.h"
#include "grammar/schema_parts.h"

namespace triattn::grammar {

namespace {

std::string join_alts(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string s = "(";
  for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : "") + alts[i];
  return s + ")";
}

std::string digits_any(size_t k) { return k == 0 ? "" : k == 1 ? " [0-9]" : " [0-9]{" + std::to_string(k) + "}"; }

// Digit strings of one length from L to H (same length; inner positions may be 0).
std::string same_len(const std::string& L, const std::string& H) {
  const size_t n = L.size();
  if (n == 1) return L == H ? "\"" + L + "\"" : "[" + L + "-" + H + "]";
  if (L[0] == H[0]) return "\"" + L.substr(0, 1) + "\" " + same_len(L.substr(1), H.substr(1));
  const bool l_min = L.find_first_not_of('0', 1) == std::string::npos;
  const bool h_max = H.find_first_not_of('9', 1) == std::string::npos;
  std::vector<std::string> alts;
  char first = L[0], last = H[0];
  if (!l_min) {
    alts.push_back("\"" + L.substr(0, 1) + "\" " + same_len(L.substr(1), std::string(n - 1, '9')));
    ++first;
  }
  if (!h_max) --last;
  if (first <= last) alts.push_back(std::string("[") + first + "-" + last + "]" + digits_any(n - 1));
  if (!h_max) alts.push_back("\"" + H.substr(0, 1) + "\" " + same_len(std::string(n - 1, '0'), H.substr(1)));
  return join_alts(alts);
}

uint64_t pow10(size_t k) {
  uint64_t p = 1;
  while (k--) p *= 10;
  return p;
}

// Whole numbers from a to b (absent: no end), without leading zeros.
std::string uint_range(uint64_t a, std::optional<uint64_t> b) {
  std::vector<std::string> alts;
  const size_t la = std::to_string(a).size();
  const size_t lb = b ? std::to_string(*b).size() : la;
  for (size_t len = la; len <= lb; ++len) {
    const uint64_t lo = len == la ? a : pow10(len - 1);
    const uint64_t hi = b && len == lb ? *b : pow10(len) - 1;
    if (lo <= hi) alts.push_back(same_len(std::to_string(lo), std::to_string(hi)));
  }
  if (!b && la < 19) alts.push_back("[1-9] [0-9]{" + std::to_string(la) + "," + std::to_string(18) + "}");
  return join_alts(alts);
}

const char* kFrac = "(\".\" [0-9]{1,15})?";
const char* kNonzeroFrac = "\".\" [0-9]{0,14} [1-9]";
const char* kZeroFrac = "(\".\" \"0\"{1,15})?";

// Numbers x >= 0 with a <= x (a < x when a_excl) and x <= b (x < b), a and b whole.
void nonneg_numbers(uint64_t a, bool a_excl, std::optional<uint64_t> b, bool b_excl, std::vector<std::string>& alts) {
  if (b && *b < a) return;
  if (b && *b == a) {
    if (!a_excl && !b_excl) alts.push_back(uint_range(a, a) + " " + kZeroFrac);
    return;
  }
  alts.push_back(uint_range(a, a) + " " + (a_excl ? kNonzeroFrac : kFrac));
  if (!b)
    alts.push_back(uint_range(a + 1, std::nullopt) + " " + kFrac);
  else if (a + 1 <= *b - 1)
    alts.push_back(uint_range(a + 1, *b - 1) + " " + kFrac);
  if (b && !b_excl) alts.push_back(uint_range(*b, *b) + " " + kZeroFrac);
}

}  // namespace

std::string integer_range_gbnf(std::optional<Bound> lo, std::optional<Bound> hi) {
  std::optional<int64_t> l, h;  // inclusive
  if (lo) l = lo->exclusive ? lo->value + 1 : lo->value;
  if (hi) h = hi->exclusive ? hi->value - 1 : hi->value;
  std::vector<std::string> alts;
  if (!h || *h >= 0) {
    const uint64_t a = static_cast<uint64_t>(l && *l > 0 ? *l : 0);
    const std::optional<uint64_t> b = h ? std::optional<uint64_t>(static_cast<uint64_t>(*h)) : std::nullopt;
    if (!b || a <= *b) alts.push_back(uint_range(a, b));
  }
  if (!l || *l < 0) {
    const uint64_t ylo = h && *h < 0 ? static_cast<uint64_t>(-*h) : 1;
    const std::optional<uint64_t> yhi = l ? std::optional<uint64_t>(static_cast<uint64_t>(-*l)) : std::nullopt;
    if (!yhi || ylo <= *yhi) alts.push_back("\"-\" " + uint_range(ylo, yhi));
  }
  if (alts.empty()) fail("no integer lies between the schema's bounds");
  return join_alts(alts);
}

std::string number_range_gbnf(std::optional<Bound> lo, std::optional<Bound> hi) {
  std::vector<std::string> alts;
  // x >= 0
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    const bool lo_pos = lo && lo->value >= 0;
    nonneg_numbers(lo_pos ? static_cast<uint64_t>(lo->value) : 0, lo_pos && lo->exclusive,
                   hi ? std::optional<uint64_t>(static_cast<uint64_t>(hi->value)) : std::nullopt, hi && hi->exclusive,
                   alts);
  }
  // x < 0, written as -y with y > 0
  if (!lo || lo->value < 0) {
    std::vector<std::string> neg;
    const bool hi_neg = hi && hi->value < 0;
    nonneg_numbers(hi_neg ? static_cast<uint64_t>(-hi->value) : 0, hi_neg ? hi->exclusive : true,
                   lo ? std::optional<uint64_t>(static_cast<uint64_t>(-lo->value)) : std::nullopt, lo && lo->exclusive,
                   neg);
    if (!neg.empty()) alts.push_back("\"-\" " + join_alts(neg));
  }
  if (alts.empty()) fail("no number lies between the schema's bounds");
  return join_alts(alts);
}

}  // namespace triattn::grammar
