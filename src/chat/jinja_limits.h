#pragma once
// Every limit on what one render of a chat template may do, in one place. A template is a
// program that arrives inside a downloaded model file (and its variables inside requests),
// so rendering must end quickly and within bounded memory whatever it contains. The values
// are far above what real chat templates need (see tests/chat/test_jinja_limits.cpp, which
// measures them) and low enough that hitting one costs well under a second and a few hundred
// MiB at most.
//
// Two mechanisms, used together:
// - size checks (here), made before a string or list is built, so an oversized value is
//   refused before its memory is taken;
// - a per-render step budget (jinja_budget.h), charged for every node, statement, loop
//   iteration and byte built, so work that stays within the sizes (nested loops, repeated
//   doubling of a value that is then thrown away) still ends.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace triattn::jinja {

// Steps one render may take. A step is one evaluated expression node or executed statement,
// or kBytesPerStep bytes of memory built or scanned: string bytes, list items (a Value each),
// dict entries; so a loop iteration costs what its `loop` object takes to build (~100 steps)
// and a macro call what its frames take. A step costs 10-100 ns, so the whole budget is at
// most about a second. Real templates need 1-3 thousand steps for a 10-message conversation
// with tools and about half a million for a 1 MB one (tests/chat/test_jinja_limits.cpp
// measures every template in shared/chat-templates).
inline constexpr int64_t kMaxSteps = 10'000'000;
// Bytes of memory per step: decoding or building 16 bytes costs about what evaluating a node
// does (copying is faster, decoding UTF-8 and copying Values slower). It also bounds memory:
// a render cannot build more than kMaxSteps * kBytesPerStep = 160 MB in all.
inline constexpr size_t kBytesPerStep = 16;

// The largest single string (16 MiB): a prompt of millions of tokens, far beyond any
// context window, yet small enough to copy in milliseconds.
inline constexpr size_t kMaxStringBytes = size_t{16} << 20;
// The most items in a single list (about a million, also the largest range()): a real
// template's lists are messages, tools and their fields, thousands at most. Checked before a
// list is built; a list that grows step by step runs out of kMaxSteps first (~6 steps an item).
inline constexpr size_t kMaxListItems = size_t{1} << 20;
// The largest rendered output (16 MiB, as one string).
inline constexpr size_t kMaxOutputBytes = size_t{16} << 20;
// Values nested inside values (a list in a list ...): tool schemas nest a dozen levels.
// The limit keeps the recursion of printing, comparing, serialising and freeing values off
// the end of the stack.
inline constexpr int kMaxNesting = 512;
// Macro calls active at once (real templates nest two or three).
inline constexpr int kMaxCallDepth = 64;
// Template syntax nested inside itself (parentheses, blocks): keeps the parser's recursion
// bounded for malformed input.
inline constexpr int kMaxSyntaxDepth = 200;

// Throw Error naming the limit when a string of `bytes` bytes, or a list of `items` items,
// would be over it. Call them with the size a result will have, before building it.
void check_string_size(size_t bytes);
void check_list_size(size_t items);
// a * b, or a value above every limit when that would overflow.
size_t saturating_mul(size_t a, size_t b);

// A string being built piece by piece that refuses to grow past kMaxStringBytes: each append
// is checked before it happens, so memory never overshoots the limit.
class CappedString {
 public:
  void append(std::string_view s) {
    check_string_size(s_.size() + s.size());
    s_.append(s);
  }
  void push_back(char c) {
    check_string_size(s_.size() + 1);
    s_.push_back(c);
  }
  size_t size() const { return s_.size(); }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

}  // namespace triattn::jinja
