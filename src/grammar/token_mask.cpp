#include "grammar/token_mask.h"

#include <functional>
#include <set>

#include "core/error.h"

namespace triattn::grammar {

namespace {

constexpr size_t kMaxCachedStates = 256;  // finished masks kept (each vocab/8 bytes)
constexpr size_t kMaxInterned = 1 << 15;  // walk states kept (1 KiB of transitions each)
constexpr size_t kMaxContexts = 2048;     // context masks kept (each vocab/8 bytes and more)

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
  walk_ids_.resize(vocab_->max_depth() + 1);
  walk_escaped_.resize(vocab_->max_depth() + 1);
}

int32_t TokenMasker::intern(StackSet s) {
  std::string key(reinterpret_cast<const char*>(s.data.data()), s.data.size() * sizeof(uint32_t));
  key += s.complete ? '1' : '0';
  auto [it, fresh] = intern_ids_.emplace(std::move(key), static_cast<int32_t>(interned_.size()));
  if (fresh) {
    interned_.push_back({std::move(s), {}});
    interned_.back().next.fill(-1);
  }
  return it->second;
}

int32_t TokenMasker::step(int32_t id, uint8_t b) {
  const int32_t known = interned_[static_cast<size_t>(id)].next[b];
  if (known >= 0) return known;
  StackSet out;
  rec_.advance(interned_[static_cast<size_t>(id)].state, b, out);
  const int32_t n = intern(std::move(out));
  interned_[static_cast<size_t>(id)].next[b] = n;
  return n;
}

TokenMasker::ContextMask TokenMasker::walk(const std::vector<uint32_t>& key) {
  // Interned states are kept across walks (their transitions do not depend on the context);
  // a grammar that makes very many of them starts over rather than hold them all.
  if (interned_.size() > kMaxInterned) {
    interned_.clear();
    intern_ids_.clear();
  }
  ContextMask m;
  m.accepted.assign(words_, 0);
  const auto& nodes = vocab_->nodes();
  const auto& order = vocab_->order();
  StackSet start;
  start.data.push_back(static_cast<uint32_t>(key.size()));
  start.data.insert(start.data.end(), key.begin(), key.end());
  walk_ids_[0] = intern(std::move(start));
  walk_escaped_[0] = 0;
  for (uint32_t i = 1; i < nodes.size();) {
    const VocabTrie::Node& node = nodes[i];
    const int32_t id = step(walk_ids_[node.depth - 1], node.byte);
    const StackSet& cur = interned_[static_cast<size_t>(id)].state;
    const bool alive = !cur.data.empty();
    const bool escaped_here = cur.complete;  // popped below the context after this byte
    const bool escaped_above = walk_escaped_[node.depth - 1];
    // Tokens ending here: kept alive inside the context, or done just as they leave it, are
    // accepted; ones that left it at an earlier byte depend on the rest of the stack.
    if (alive || escaped_here) {
      for (uint32_t t = node.tok_begin; t < vocab_->tokens_end(i); ++t) set_bit(m.accepted, static_cast<size_t>(order[t]));
    } else if (escaped_above) {
      for (uint32_t t = node.tok_begin; t < vocab_->tokens_end(i); ++t) m.uncertain.push_back(order[t]);
    }
    if (alive) {
      walk_ids_[node.depth] = id;
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

const TokenMasker::ContextMask& TokenMasker::context(std::vector<uint32_t> key) {
  auto it = contexts_.find(key);
  if (it != contexts_.end()) return it->second;
  ContextMask m = walk(key);
  // A grammar that reaches very many contexts starts over rather than hold them all (mask()
  // uses each one before asking for the next, so clearing here is safe).
  if (contexts_.size() >= kMaxContexts) contexts_.clear();
  return contexts_.emplace(std::move(key), std::move(m)).first->second;
}

const TokenBits& TokenMasker::mask(const StackSet& state) {
  auto key = std::make_pair(state.data, state.complete);
  if (auto it = states_.find(key); it != states_.end()) return it->second;
  scratch_.assign(words_, 0);
  StackSet one;
  for (size_t i = 0; i < state.data.size();) {
    const uint32_t len = state.data[i];
    const auto top = state.data.begin() + static_cast<long>(i + 1 + len);
    const ContextMask& cm = context(std::vector<uint32_t>(top - static_cast<long>(std::min<size_t>(len, kContext)), top));
    for (size_t w = 0; w < words_; ++w) scratch_[w] |= cm.accepted[w];
    for (int32_t t : cm.uncertain) {
      if (test_bit(scratch_, static_cast<size_t>(t))) continue;
      one.complete = false;
      one.data.assign(state.data.begin() + static_cast<long>(i), top);
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
