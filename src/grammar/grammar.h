#pragma once
// The grammar IR every source compiles to (GBNF text, JSON Schema through GBNF): rules of
// alternatives of sequences, where an element is a terminal (one byte out of a set) or a
// reference to a rule. Terminals are bytes, not characters: a character class is lowered to
// its UTF-8 byte sequences when the grammar is built, so the recognizer and the vocabulary
// walk never decode UTF-8 and a character split across tokens needs no special case.
//
// Storage is flat: the elements of every alternative lie in one array, each alternative
// ending with an End element, so a recognizer position is one index into that array.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace triattn::grammar {

// A set of bytes, one bit each.
struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
  }
  bool empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
};

struct Element {
  enum Kind : uint8_t { End, Term, Ref } kind = End;
  uint32_t value = 0;  // Term: index into Grammar::sets; Ref: rule id
};

struct Grammar {
  std::vector<Element> elems;                 // every alternative, each closed by End
  std::vector<std::vector<uint32_t>> rules;   // per rule: the position of each alternative
  std::vector<std::string> names;             // per rule, for messages
  std::vector<ByteSet> sets;                  // the terminals' byte sets
  uint32_t root = 0;

  const ByteSet& set_at(uint32_t pos) const { return sets[elems[pos].value]; }
};

// Builds a Grammar rule by rule. Rules may be referenced before they are defined;
// finish() checks that every referenced rule was defined, that no rule is left-recursive
// (the recognizer expands rules depth first) and names the offender otherwise.
class GrammarBuilder {
 public:
  // The id of the rule with this name, created undefined on first mention.
  uint32_t rule(const std::string& name);
  // A fresh rule for a group, a repetition or a character class, named after its parent.
  uint32_t fresh(const std::string& base);
  bool defined(uint32_t rule) const { return defined_[rule]; }
  // Appends one alternative (a sequence of elements, without End) to a rule.
  void add_alternative(uint32_t rule, const std::vector<Element>& seq);
  Element term(const ByteSet& s);
  static Element ref(uint32_t rule) { return {Element::Ref, rule}; }
  size_t size() const { return g_.elems.size(); }
  // Throws Error on an undefined or left-recursive rule; `root` must be defined.
  Grammar finish(const std::string& root);

 private:
  Grammar g_;
  std::vector<std::vector<std::vector<Element>>> pending_;  // alternatives per rule
  std::vector<bool> defined_;
};

}  // namespace triattn::grammar
