#pragma once
// The set of tokens a grammar state allows, for one grammar and one vocabulary.
//
// Speed comes from caches. Per context (the top kContext positions of a stack, the top one a
// terminal) the vocabulary trie is walked once with that context alone as the stack: a token
// that the context accepts without popping below it is accepted whatever lies below; one
// that pops below it before its last byte is "uncertain" and is checked against the whole
// stack at run time; the rest are rejected. Inside a JSON string the context is the string's
// repetition, so only tokens that close the string are uncertain. A step then costs one
// bitset OR per live stack plus its few uncertain tokens, and the finished mask is kept per
// whole state too (JSON revisits states once per array item or property). The walks step
// through interned recognizer states whose transitions are memoized, so a walk over a
// vocabulary of 150k tokens costs a table lookup per trie node once its states are known.
//
// Not thread-safe: one inference thread uses it (the server's); any number of sequences of
// that thread may share it.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/recognizer.h"
#include "grammar/vocab_trie.h"

namespace triattn::grammar {

// One bit per token id.
using TokenBits = std::vector<uint64_t>;
inline bool test_bit(const TokenBits& b, size_t i) { return (b[i >> 6] >> (i & 63)) & 1; }
inline void set_bit(TokenBits& b, size_t i) { b[i >> 6] |= uint64_t{1} << (i & 63); }

// Throws Error naming a byte (or byte class) that the grammar requires and that no token of
// the vocabulary spells, when the grammar cannot be completed with this vocabulary at all.
void check_spellable(const Grammar& g, const VocabTrie& vocab);

class TokenMasker {
 public:
  TokenMasker(std::shared_ptr<const Grammar> g, std::shared_ptr<const VocabTrie> vocab);

  const Grammar& grammar() const { return *g_; }
  const VocabTrie& vocab() const { return *vocab_; }
  const Recognizer& recognizer() const { return rec_; }
  StackSet initial() const { return rec_.initial(); }

  // The tokens allowed in `state`: those whose bytes keep it alive, and the
  // end-of-generation tokens when it is complete. Valid until the next call.
  const TokenBits& mask(const StackSet& state);

 private:
  static constexpr size_t kContext = 3;  // stack positions a cached walk starts from

  struct ContextMask {
    TokenBits accepted;
    std::vector<int32_t> uncertain;
  };
  // A recognizer state seen by the walks, and where each byte takes it (-1: not yet known).
  struct Interned {
    StackSet state;
    std::array<int32_t, 256> next;
  };
  const ContextMask& context(std::vector<uint32_t> key);
  ContextMask walk(const std::vector<uint32_t>& key);
  int32_t intern(StackSet s);
  int32_t step(int32_t id, uint8_t b);

  std::shared_ptr<const Grammar> g_;
  std::shared_ptr<const VocabTrie> vocab_;
  Recognizer rec_;
  size_t words_;
  std::map<std::vector<uint32_t>, ContextMask> contexts_;
  std::vector<Interned> interned_;
  std::unordered_map<std::string, int32_t> intern_ids_;
  std::map<std::pair<std::vector<uint32_t>, bool>, TokenBits> states_;
  TokenBits scratch_;
  std::vector<int32_t> walk_ids_;
  std::vector<uint8_t> walk_escaped_;
};

}  // namespace triattn::grammar
