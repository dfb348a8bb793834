#include "tokenizer/bpe_merge.h"

#include <queue>

namespace triattn {

BpeMerger::BpeMerger(const std::vector<std::string>& bytes_of, const std::vector<bool>& usable,
                     bool ignore_merges, int32_t unk_id)
    : ignore_merges_(ignore_merges), unk_id_(unk_id) {
  ids_.reserve(bytes_of.size());
  for (size_t id = 0; id < bytes_of.size(); ++id) {
    // First id wins on duplicates, so the lower (more frequent) entry is used.
    if (usable[id] && !bytes_of[id].empty()) ids_.emplace(bytes_of[id], int32_t(id));
  }
  for (int b = 0; b < 256; ++b) byte_id_[b] = find(std::string_view(reinterpret_cast<const char*>(&b), 1));
}

int32_t BpeMerger::find(std::string_view bytes) const {
  auto it = ids_.find(bytes);
  return it == ids_.end() ? -1 : it->second;
}

bool BpeMerger::add_merge(std::string_view left, std::string_view right, int32_t rank) {
  const int32_t a = find(left), b = find(right);
  std::string joined(left);
  joined += right;
  const int32_t r = find(joined);
  if (a < 0 || b < 0 || r < 0) return false;
  merges_.emplace(key(a, b), Merge{rank, r});
  return true;
}

void BpeMerger::add_merges_from_ranks(const std::vector<std::string>& bytes_of) {
  for (const auto& [bytes, id] : ids_) {
    for (size_t k = 1; k < bytes.size(); ++k) {
      const int32_t a = find(std::string_view(bytes).substr(0, k));
      if (a < 0) continue;
      const int32_t b = find(std::string_view(bytes).substr(k));
      if (b < 0) continue;
      auto [it, inserted] = merges_.emplace(key(a, b), Merge{id, id});
      if (!inserted && it->second.rank > id) it->second = Merge{id, id};
    }
  }
}

const BpeMerger::Merge* BpeMerger::lookup(int32_t a, int32_t b) const {
  if (a < 0 || b < 0) return nullptr;
  auto it = merges_.find(key(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeMerger::encode(std::string_view bytes, std::vector<int32_t>& out) const {
  if (bytes.empty()) return;
  if (ignore_merges_ || bytes.size() == 1) {
    const int32_t whole = find(bytes);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  // Symbols form a doubly linked list over the bytes; a min-heap holds candidate merges
  // (rank, left position). Entries made stale by an earlier merge are skipped on pop by
  // re-checking the pair they recorded.
  struct Sym {
    int32_t id;
    int32_t prev, next;
  };
  std::vector<Sym> sym(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    sym[i] = Sym{byte_id_[uint8_t(bytes[i])], int32_t(i) - 1,
                 i + 1 < bytes.size() ? int32_t(i + 1) : -1};
  }
  struct Cand {
    int32_t rank, pos, left_id, right_id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int32_t pos) {
    if (pos < 0 || sym[pos].next < 0) return;
    const Sym& l = sym[pos];
    const Sym& r = sym[l.next];
    if (const Merge* m = lookup(l.id, r.id)) heap.push(Cand{m->rank, pos, l.id, r.id});
  };
  for (int32_t i = 0; i + 1 < int32_t(bytes.size()); ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& l = sym[c.pos];
    if (l.id != c.left_id || l.next < 0 || sym[l.next].id != c.right_id) continue;  // stale
    const Merge* m = lookup(l.id, sym[l.next].id);
    const int32_t dead = l.next;
    l.id = m->result;
    l.next = sym[dead].next;
    if (l.next >= 0) sym[l.next].prev = c.pos;
    sym[dead].id = -2;  // marks a removed symbol, so stale entries pointing at it fail
    push(l.prev);
    push(c.pos);
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    if (sym[i].id >= 0) {
      out.push_back(sym[i].id);
    } else if (unk_id_ >= 0) {
      out.push_back(unk_id_);  // a byte the vocabulary lacks (only in invalid UTF-8)
    }
  }
}

}  // namespace triattn
