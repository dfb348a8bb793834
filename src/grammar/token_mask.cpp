#include "grammar/token_mask.h"

#include <functional>
#include <set>

#include "core/error.h"

namespace triattn::grammar {

namespace {

constexpr size_t kMaxCachedStates = 256;  // finished masks kept (each vocab/8 bytes)

std::string describe(const ByteSet& s) {
  std::string out;
  int shown = 0;
  for (int b = 0; b < 256 && shown < 8; ++b) {
    if (!s.has(static_cast<uint8_t>(b))) continue;
    if (shown++) out += ", ";
    if (b >= 0x21 && b < 0x7F) {
      out += "'" + std::string(1, static_cast<char>(b)) + "'";
    } else {
      static const char* hex = "0123456789ABCDEF";
      out += std::string("byte 0x") + hex[b >> 4] + hex[b & 15];
    }
  }
  return out;
}

}  // namespace

void check_spellable(const Grammar& g, const VocabTrie& vocab) {
  auto term_ok = [&](uint32_t set) {
    for (int b = 0; b < 256; ++b)
      if (g.sets[set].has(static_cast<uint8_t>(b)) && vocab.spells(static_cast<uint8_t>(b))) return true;
    return false;
  };
  const size_t n = g.rules.size();
  auto alt_ok = [&](uint32_t pos, const std::vector<bool>& ok) {
    for (uint32_t p = pos; g.elems[p].kind != Element::End; ++p) {
      const Element e = g.elems[p];
      if (e.kind == Element::Term ? !term_ok(e.value) : !ok[e.value]) return false;
    }
    return true;
  };
  // Rules that some spellable input completes, to the fixed point.
  std::vector<bool> ok(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t r = 0; r < n; ++r) {
      if (ok[r]) continue;
      for (uint32_t alt : g.rules[r])
        if (alt_ok(alt, ok)) {
          ok[r] = changed = true;
          break;
        }
    }
  }
  if (ok[g.root]) return;
  // Name the first thing the root cannot do without: the first unspellable terminal down
  // the first alternatives.
  std::set<uint32_t> seen;
  uint32_t r = g.root;
  for (;;) {
    seen.insert(r);
    const uint32_t alt = g.rules[r].front();
    for (uint32_t p = alt; g.elems[p].kind != Element::End; ++p) {
      const Element e = g.elems[p];
      if (e.kind == Element::Term && !term_ok(e.value))
        fail("the vocabulary cannot spell what the grammar requires: no token holds ", describe(g.sets[e.value]),
             " (rule '", g.names[r], "')");
      if (e.kind == Element::Ref && !ok[e.value] && !seen.count(e.value)) {
        r = e.value;
        break;
      }
      if (g.elems[p + 1].kind == Element::End)
        fail("the vocabulary cannot spell what the grammar requires (rule '", g.names[r], "')");
    }
  }
}

TokenMasker::TokenMasker(std::shared_ptr<const Grammar> g, std::shared_ptr<const VocabTrie> vocab)
    : g_(std::move(g)), vocab_(std::move(vocab)), rec_(*g_), words_((vocab_->vocab_size() + 63) / 64) {
  walk_states_.resize(vocab_->max_depth() + 1);
  walk_escaped_.resize(vocab_->max_depth() + 1);
}

TokenMasker::PositionMask TokenMasker::walk(uint32_t pos) {
  PositionMask m;
  m.accepted.assign(words_, 0);
  const auto& nodes = vocab_->nodes();
  const auto& order = vocab_->order();
  walk_states_[0] = rec_.local(pos);
  walk_escaped_[0] = 0;
  for (uint32_t i = 1; i < nodes.size();) {
    const VocabTrie::Node& node = nodes[i];
    const StackSet& parent = walk_states_[node.depth - 1];
    StackSet& cur = walk_states_[node.depth];
    rec_.advance(parent, node.byte, cur);
    const bool alive = !cur.data.empty();
    const bool escaped_here = cur.complete;  // left the rule after this byte
    const bool escaped_above = walk_escaped_[node.depth - 1];
    // Tokens ending here: kept alive inside the rule, or done just as they leave it, are
    // accepted; ones that left it at an earlier byte depend on the rest of the stack.
    if (alive || escaped_here) {
      for (uint32_t t = node.tok_begin; t < vocab_->tokens_end(i); ++t) set_bit(m.accepted, static_cast<size_t>(order[t]));
    } else if (escaped_above) {
      for (uint32_t t = node.tok_begin; t < vocab_->tokens_end(i); ++t) m.uncertain.push_back(order[t]);
    }
    if (alive) {
      walk_escaped_[node.depth] = escaped_above || escaped_here;
      ++i;
      continue;
    }
    if (escaped_above || escaped_here)
      for (uint32_t t = vocab_->tokens_end(i); t < vocab_->subtree_tokens_end(i); ++t) m.uncertain.push_back(order[t]);
    i = node.end;
  }
  return m;
}

const TokenMasker::PositionMask& TokenMasker::position(uint32_t pos) {
  auto it = positions_.find(pos);
  if (it != positions_.end()) return it->second;
  return positions_.emplace(pos, walk(pos)).first->second;
}

const TokenBits& TokenMasker::mask(const StackSet& state) {
  auto key = std::make_pair(state.data, state.complete);
  if (auto it = states_.find(key); it != states_.end()) return it->second;
  scratch_.assign(words_, 0);
  StackSet one;
  for (size_t i = 0; i < state.data.size();) {
    const uint32_t len = state.data[i];
    const PositionMask& pm = position(state.data[i + len]);
    for (size_t w = 0; w < words_; ++w) scratch_[w] |= pm.accepted[w];
    for (int32_t t : pm.uncertain) {
      if (test_bit(scratch_, static_cast<size_t>(t))) continue;
      one.complete = false;
      one.data.assign(state.data.begin() + static_cast<long>(i), state.data.begin() + static_cast<long>(i + 1 + len));
      if (rec_.advance(one, vocab_->bytes(t))) set_bit(scratch_, static_cast<size_t>(t));
    }
    i += len + 1;
  }
  if (state.complete)
    for (int32_t id : vocab_->eog()) set_bit(scratch_, static_cast<size_t>(id));
  if (states_.size() >= kMaxCachedStates) states_.clear();
  return states_.emplace(std::move(key), scratch_).first->second;
}

}  // namespace triattn::grammar
