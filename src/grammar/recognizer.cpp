#include "grammar/recognizer.h"

#include <algorithm>
#include <cstring>

namespace triattn::grammar {

void Recognizer::emit(const std::vector<uint32_t>& s, StackSet& out) const {
  if (s.empty()) {
    out.complete = true;
    return;
  }
  if (s.size() > kMaxDepth) return;
  // Duplicates are dropped: two derivations at the same stack behave the same from now on.
  size_t i = 0, count = 0;
  const size_t n = out.data.size();
  while (i < n) {
    const uint32_t len = out.data[i];
    if (len == s.size() && std::memcmp(&out.data[i + 1], s.data(), len * sizeof(uint32_t)) == 0) return;
    i += len + 1;
    ++count;
  }
  if (count >= kMaxStacks) return;
  out.data.push_back(static_cast<uint32_t>(s.size()));
  out.data.insert(out.data.end(), s.begin(), s.end());
}

void Recognizer::settle(std::vector<uint32_t>& s, StackSet& out, size_t depth) const {
  if (depth > 2 * kMaxDepth) return;
  if (s.empty()) {
    out.complete = true;
    return;
  }
  const uint32_t p = s.back();
  const Element e = g_->elems[p];
  switch (e.kind) {
    case Element::Term:
      emit(s, out);
      return;
    case Element::End:
      s.pop_back();
      settle(s, out, depth + 1);
      s.push_back(p);
      return;
    case Element::Ref: {
      if (s.size() > kMaxDepth) return;
      // A reference that ends its alternative returns nowhere: replacing it (a tail call)
      // keeps repetitions from growing the stack.
      const bool tail = g_->elems[p + 1].kind == Element::End;
      if (tail)
        s.pop_back();
      else
        s.back() = p + 1;
      for (uint32_t alt : g_->rules[e.value]) {
        s.push_back(alt);
        settle(s, out, depth + 1);
        s.pop_back();
      }
      if (tail)
        s.push_back(p);
      else
        s.back() = p;
      return;
    }
  }
}

StackSet Recognizer::initial() const {
  StackSet out;
  for (uint32_t alt : g_->rules[g_->root]) {
    scratch_.assign(1, alt);
    settle(scratch_, out);
  }
  return out;
}

StackSet Recognizer::local(uint32_t pos) const {
  StackSet out;
  scratch_.assign(1, pos);
  settle(scratch_, out);
  return out;
}

void Recognizer::advance(const StackSet& in, uint8_t b, StackSet& out) const {
  out.clear();
  const size_t n = in.data.size();
  for (size_t i = 0; i < n;) {
    const uint32_t len = in.data[i];
    const uint32_t top = in.data[i + len];
    if (g_->set_at(top).has(b)) {
      scratch_.assign(in.data.begin() + static_cast<long>(i) + 1, in.data.begin() + static_cast<long>(i + 1 + len));
      scratch_.back() = top + 1;
      settle(scratch_, out);
    }
    i += len + 1;
  }
}

bool Recognizer::advance(StackSet& in, std::string_view s) const {
  StackSet next;
  for (char c : s) {
    advance(in, static_cast<uint8_t>(c), next);
    std::swap(in, next);
    if (!in.alive()) return false;
  }
  return true;
}

}  // namespace triattn::grammar
