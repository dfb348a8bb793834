#pragma once
// A pushdown recognizer over bytes: its state is the set of grammar stacks still alive
// (positions of the flat IR, the top one always a terminal), advanced one byte at a time.
// A stack that runs out of rule has completed the grammar. States are flat arrays, so
// copying one (a fork, a trial token) is one vector copy and the vocabulary walk advances
// them without allocating.
#include <cstdint>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace triattn::grammar {

// Stacks stored one after another, each as [length, positions bottom..top].
struct StackSet {
  std::vector<uint32_t> data;
  bool complete = false;  // some stack emptied: the grammar has matched the input so far
  bool alive() const { return complete || !data.empty(); }
  void clear() {
    data.clear();
    complete = false;
  }
  bool operator==(const StackSet&) const = default;
};

class Recognizer {
 public:
  // Stacks longer than this (nesting that deep) die, and sets hold at most kMaxStacks
  // stacks: an ambiguous grammar must not grow the state without bound.
  static constexpr size_t kMaxDepth = 2048;
  static constexpr size_t kMaxStacks = 256;

  explicit Recognizer(const Grammar& g) : g_(&g) {}
  const Grammar& grammar() const { return *g_; }

  // The state before any byte: the root rule expanded.
  StackSet initial() const;
  // The state holding one stack [pos], expanded; a stack that would pop below it sets
  // `complete` (the vocabulary walk reads it as "left the rule").
  StackSet local(uint32_t pos) const;
  // out := in advanced by byte b (out is cleared first; may not alias in).
  void advance(const StackSet& in, uint8_t b, StackSet& out) const;
  // in advanced by every byte of s; false (and `in` unspecified) when it dies.
  bool advance(StackSet& in, std::string_view s) const;

 private:
  // Expands the stack in scratch_ until every stack's top is a terminal, adding each to out.
  // depth: calls above this one (a chain of rules that only name the next one recurses
  // without growing the stack; past kMaxDepth such a path is dropped).
  void settle(std::vector<uint32_t>& s, StackSet& out, size_t depth = 0) const;
  void emit(const std::vector<uint32_t>& s, StackSet& out) const;

  const Grammar* g_;
  mutable std::vector<uint32_t> scratch_;
};

}  // namespace triattn::grammar
