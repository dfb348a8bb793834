// Numeric bounds as digit grammars: a range of whole numbers is split by digit count, then
// at the first digit where its ends differ (the usual regex construction), so the grammar
// accepts exactly the numbers in range, written without leading zeros.
#include <charconv>
#include <cmath>
#include <optional>
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

constexpr int kMaxFrac = 15;  // fraction digits generated
const char* kAnyFrac = "(\".\" [0-9]{1,15})?";

// A non-negative decimal: whole part and fraction digits without trailing zeros.
struct Decimal {
  uint64_t whole = 0;
  std::string frac;
};

Decimal decimal(double d) {
  char buf[512];
  const auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::fixed);
  const std::string s(buf, r.ptr);
  const size_t dot = s.find('.');
  Decimal out;
  out.whole = std::stoull(s.substr(0, dot));
  if (dot != std::string::npos) out.frac = s.substr(dot + 1);
  while (!out.frac.empty() && out.frac.back() == '0') out.frac.pop_back();
  return out;
}

// One side of a fraction bound as the digits are read: no constraint left, the rest of the
// bound still to compare, or out of range.
struct Side {
  enum Kind { Free, Pending, Out } kind = Free;
  std::string rest;
  bool strict = false;
  bool operator==(const Side&) const = default;
};

// Fraction digits D (the digits after the point, from position `depth`) with lo < or <= 0.D
// and 0.D < or <= hi, compared digit by digit; "" may end D when allow_end. Absent: none.
std::optional<std::string> frac_digits(Side lo, Side hi, int depth, bool allow_end) {
  if (lo.kind == Side::Pending && lo.rest.empty() && !lo.strict) lo.kind = Side::Free;
  std::vector<std::string> alts;
  // D ending here reads as zeros from here on.
  const bool end_ok = (lo.kind == Side::Free) && (hi.kind == Side::Free || !hi.rest.empty() || !hi.strict);
  if (allow_end && end_ok) alts.push_back("\"\"");
  if (depth < kMaxFrac) {
    if (lo.kind == Side::Free && hi.kind == Side::Free) {
      alts.push_back("[0-9]{1," + std::to_string(kMaxFrac - depth) + "}");
    } else if (!(hi.kind == Side::Pending && hi.rest.empty() && hi.strict)) {  // else below zero: nothing
      auto next_lo = [&](int d) {
        if (lo.kind == Side::Free) return lo;
        const int l0 = lo.rest.empty() ? 0 : lo.rest[0] - '0';
        if (d > l0) return Side{};
        if (d < l0) return Side{Side::Out, "", false};
        return Side{Side::Pending, lo.rest.empty() ? "" : lo.rest.substr(1), lo.strict};
      };
      auto next_hi = [&](int d) {
        if (hi.kind == Side::Free) return hi;
        const int h0 = hi.rest.empty() ? 0 : hi.rest[0] - '0';
        if (d < h0) return Side{};
        if (d > h0) return Side{Side::Out, "", false};
        return Side{Side::Pending, hi.rest.empty() ? "" : hi.rest.substr(1), hi.strict};
      };
      // Consecutive digits with the same outcome share a class.
      for (int d = 0; d <= 9;) {
        const Side l = next_lo(d), h = next_hi(d);
        int e = d;
        while (e + 1 <= 9 && next_lo(e + 1) == l && next_hi(e + 1) == h) ++e;
        if (l.kind != Side::Out && h.kind != Side::Out)
          if (auto sub = frac_digits(l, h, depth + 1, true))
            alts.push_back("[" + std::to_string(d) + "-" + std::to_string(e) + "] " + *sub);
        d = e + 1;
      }
    }
  }
  if (alts.empty()) return std::nullopt;
  return join_alts(alts);
}

// The fraction of a number (nothing, or "." and digits) between two fraction bounds.
std::optional<std::string> frac_part(Side lo, Side hi) {
  if (lo.kind == Side::Pending && lo.rest.empty() && !lo.strict) lo.kind = Side::Free;
  const bool none_ok = lo.kind == Side::Free && (hi.kind == Side::Free || !hi.rest.empty() || !hi.strict);
  const auto digits = frac_digits(lo, hi, 0, false);
  if (digits && none_ok) return "(\".\" " + *digits + ")?";
  if (digits) return "\".\" " + *digits;
  if (none_ok) return std::string("\"\"");
  return std::nullopt;
}

// Numbers x >= 0 with a <= x (a < x) and x <= b (x < b).
void nonneg_numbers(const Decimal& a, bool a_excl, const std::optional<Decimal>& b, bool b_excl,
                    std::vector<std::string>& alts) {
  const Side lo{Side::Pending, a.frac, a_excl};
  const Side hi = b ? Side{Side::Pending, b->frac, b_excl} : Side{};
  auto add = [&](uint64_t whole, const std::optional<std::string>& frac) {
    if (frac) alts.push_back(uint_range(whole, whole) + " " + *frac);
  };
  if (b && b->whole < a.whole) return;
  if (b && b->whole == a.whole) {
    add(a.whole, frac_part(lo, hi));
    return;
  }
  add(a.whole, frac_part(lo, Side{}));
  if (!b)
    alts.push_back(uint_range(a.whole + 1, std::nullopt) + " " + kAnyFrac);
  else if (a.whole + 1 <= b->whole - 1)
    alts.push_back(uint_range(a.whole + 1, b->whole - 1) + " " + kAnyFrac);
  if (b) add(b->whole, frac_part(Side{}, hi));
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

std::string number_range_gbnf(std::optional<RealBound> lo, std::optional<RealBound> hi) {
  std::vector<std::string> alts;
  // x >= 0
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    const bool lo_pos = lo && lo->value >= 0;
    nonneg_numbers(lo_pos ? decimal(lo->value) : Decimal{}, lo_pos && lo->exclusive,
                   hi ? std::optional<Decimal>(decimal(hi->value)) : std::nullopt, hi && hi->exclusive, alts);
  }
  // x < 0, written as -y with y > 0
  if (!lo || lo->value < 0) {
    std::vector<std::string> neg;
    const bool hi_neg = hi && hi->value < 0;
    nonneg_numbers(hi_neg ? decimal(hi->value) : Decimal{}, hi_neg ? hi->exclusive : true,
                   lo ? std::optional<Decimal>(decimal(lo->value)) : std::nullopt, lo && lo->exclusive, neg);
    if (!neg.empty()) alts.push_back("\"-\" " + join_alts(neg));
  }
  if (alts.empty()) fail("no number lies between the schema's bounds");
  return join_alts(alts);
}

}  // namespace triattn::grammar
