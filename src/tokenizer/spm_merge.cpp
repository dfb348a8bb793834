// The two merge rules of SpmTokenizer. Both keep symbols in a linked list over the word and
// use a heap of candidate pairs, so a long text (there is no pre-tokenizer splitting it into
// words) costs O(n log n) rather than a rescan per merge.
#include <algorithm>
#include <queue>
#include <vector>

#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/utf8.h"

namespace triattn {

namespace {

struct Symbol {
  uint32_t start = 0, len = 0;  // bytes of the word; len == 0 once merged into its left
  int32_t prev = -1, next = -1;
  int32_t id = -1;              // rank-driven only: current token id
};

}  // namespace

// llama.cpp / SentencePiece-BPE rule: merge the adjacent pair whose concatenation is a piece
// with the highest score; among equal scores the leftmost pair goes first.
void SpmTokenizer::merge_by_score(std::string_view word, std::vector<int32_t>& out) const {
  std::vector<Symbol> syms;
  uint32_t pos = 0;
  for (std::string_view ch : utf8_split_chars(word)) {
    Symbol s;
    s.start = pos;
    s.len = static_cast<uint32_t>(ch.size());
    s.prev = static_cast<int32_t>(syms.size()) - 1;
    s.next = static_cast<int32_t>(syms.size()) + 1;
    syms.push_back(s);
    pos += s.len;
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  struct Bigram {
    float score;
    int32_t left, right;
    uint32_t len;  // combined length when queued; a mismatch means the entry went stale
  };
  auto worse = [](const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
  auto try_pair = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const uint32_t len = syms[l].len + syms[r].len;
    auto it = merge_index_.find(std::string(word.substr(syms[l].start, len)));
    if (it == merge_index_.end()) return;
    queue.push({v_.scores[it->second], l, r, len});
  };
  for (size_t i = 1; i < syms.size(); ++i) try_pair(static_cast<int32_t>(i) - 1, static_cast<int32_t>(i));

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = syms[b.left];
    Symbol& r = syms[b.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.len || l.next != b.right) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    try_pair(l.prev, b.left);
    try_pair(b.left, l.next);
  }

  // Every merged symbol is a piece by construction; a lone character may not be, and then
  // its bytes fall back to <0xNN> tokens.
  for (int32_t i = 0; i >= 0; i = syms[i].next) {
    const std::string_view text = word.substr(syms[i].start, syms[i].len);
    auto it = merge_index_.find(std::string(text));
    if (it != merge_index_.end()) {
      out.push_back(it->second);
    } else {
      push_bytes(text, out);
    }
  }
}

// HF tokenizers BPE rule: characters become ids (byte fallback / <unk> for unknown ones),
// then the adjacent pair with the lowest merge rank is merged, leftmost first.
void SpmTokenizer::merge_by_rank(std::string_view word, std::vector<int32_t>& out) const {
  if (v_.ignore_merges) {
    auto it = all_index_.find(std::string(word));
    if (it != all_index_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<Symbol> syms;  // only id and the links matter here
  auto add = [&](int32_t id) {
    Symbol s;
    s.id = id;
    s.prev = static_cast<int32_t>(syms.size()) - 1;
    s.next = static_cast<int32_t>(syms.size()) + 1;
    syms.push_back(s);
  };
  bool prev_unknown = false;
  for (std::string_view ch : utf8_split_chars(word)) {
    auto it = all_index_.find(std::string(ch));
    if (it != all_index_.end()) {
      add(it->second);
      prev_unknown = false;
      continue;
    }
    const bool bytes_known = v_.byte_fallback && std::all_of(ch.begin(), ch.end(), [&](char c) {
      return byte_ids_[static_cast<uint8_t>(c)] >= 0;
    });
    if (bytes_known) {
      for (char c : ch) add(byte_ids_[static_cast<uint8_t>(c)]);
      prev_unknown = false;
    } else if (v_.unk >= 0) {
      // A run of unknown characters becomes one <unk> when fuse_unk is set.
      if (!(v_.fuse_unk && prev_unknown)) add(v_.unk);
      prev_unknown = true;
    }
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  struct Candidate {
    int32_t rank, pos, new_id;
  };
  auto worse = [](const Candidate& a, const Candidate& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.pos > b.pos);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> queue(worse);
  auto lookup = [&](int32_t l, int32_t r) -> const std::pair<int32_t, int32_t>* {
    auto it = merge_ranks_.find((static_cast<uint64_t>(static_cast<uint32_t>(syms[l].id)) << 32) |
                                static_cast<uint32_t>(syms[r].id));
    return it == merge_ranks_.end() ? nullptr : &it->second;
  };
  auto try_pair = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    if (const auto* m = lookup(l, r)) queue.push({m->first, l, m->second});
  };
  for (size_t i = 1; i < syms.size(); ++i) try_pair(static_cast<int32_t>(i) - 1, static_cast<int32_t>(i));

  std::vector<bool> dead(syms.size(), false);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    if (dead[c.pos]) continue;
    Symbol& l = syms[c.pos];
    if (l.next < 0) continue;
    // A stale entry: the pair at this position has changed since it was queued.
    const auto* m = lookup(c.pos, l.next);
    if (m == nullptr || m->second != c.new_id || m->first != c.rank) continue;
    Symbol& r = syms[l.next];
    dead[l.next] = true;
    l.id = c.new_id;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.pos;
    try_pair(l.prev, c.pos);
    try_pair(c.pos, l.next);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

}  // namespace triattn
