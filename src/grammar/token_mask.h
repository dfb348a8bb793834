#pragma once
// The set of tokens a grammar state allows, for one grammar and one vocabulary.
//
// Speed comes from two caches. Per terminal position p of the grammar (the top of a stack),
// the vocabulary trie is walked once with the stack [p] alone: a token that the rule around
// p accepts without returning from it is accepted whatever lies below on the stack; one
// that returns from it before its last byte is "uncertain" and is checked against the whole
// stack at run time; the rest are rejected. So a step costs one bitset OR per live stack plus
// the few uncertain tokens. Per whole state, the finished mask is kept too (JSON revisits
// the same states once per array item or property).
//
// Not thread-safe: one inference thread uses it (the server's); any number of sequences of
// that thread may share it.
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
  struct PositionMask {
    TokenBits accepted;
    std::vector<int32_t> uncertain;
  };
  const PositionMask& position(uint32_t pos);
  PositionMask walk(uint32_t pos);

  std::shared_ptr<const Grammar> g_;
  std::shared_ptr<const VocabTrie> vocab_;
  Recognizer rec_;
  size_t words_;
  std::unordered_map<uint32_t, PositionMask> positions_;
  std::map<std::pair<std::vector<uint32_t>, bool>, TokenBits> states_;
  TokenBits scratch_;
  std::vector<StackSet> walk_states_;
  std::vector<uint8_t> walk_escaped_;
};

}  // namespace triattn::grammar
