#include "grammar/grammar.h"

#include <algorithm>
#include <functional>
#include <map>

#include "core/error.h"

namespace triattn::grammar {

uint32_t GrammarBuilder::rule(const std::string& name) {
  for (uint32_t i = 0; i < g_.names.size(); ++i)
    if (g_.names[i] == name) return i;
  g_.names.push_back(name);
  pending_.emplace_back();
  defined_.push_back(false);
  return static_cast<uint32_t>(g_.names.size() - 1);
}

uint32_t GrammarBuilder::fresh(const std::string& base) {
  // Generated names hold '-' and a number, which a GBNF rule name written by hand may too,
  // so a clash is avoided by counting up until the name is new.
  for (size_t n = g_.names.size();; ++n) {
    std::string name = base + "-" + std::to_string(n);
    bool taken = false;
    for (const std::string& s : g_.names) taken = taken || s == name;
    if (!taken) return rule(name);
  }
}

void GrammarBuilder::add_alternative(uint32_t rule, const std::vector<Element>& seq) {
  pending_[rule].push_back(seq);
  defined_[rule] = true;
}

Element GrammarBuilder::term(const ByteSet& s) {
  for (uint32_t i = 0; i < g_.sets.size(); ++i)
    if (g_.sets[i] == s) return {Element::Term, i};
  g_.sets.push_back(s);
  return {Element::Term, static_cast<uint32_t>(g_.sets.size() - 1)};
}

Grammar GrammarBuilder::finish(const std::string& root) {
  const size_t n = g_.names.size();
  for (uint32_t r = 0; r < n; ++r)
    if (!defined_[r]) fail("grammar: rule '", g_.names[r], "' is used but never defined");
  auto it = std::find(g_.names.begin(), g_.names.end(), root);
  if (it == g_.names.end()) fail("grammar: no '", root, "' rule (the rule generation starts from)");
  g_.root = static_cast<uint32_t>(it - g_.names.begin());

  // Nullable rules (can match nothing), to the fixed point.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : pending_[r]) {
        bool all = true;
        for (const Element& e : alt) all = all && e.kind == Element::Ref && nullable[e.value];
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  // Left recursion: a rule reachable from itself without consuming a byte would expand
  // forever. Depth-first search over "r starts with s" edges.
  std::vector<int> mark(n, 0);  // 0 new, 1 on the path, 2 done
  std::function<void(uint32_t)> visit = [&](uint32_t r) {
    mark[r] = 1;
    for (const auto& alt : pending_[r])
      for (const Element& e : alt) {
        if (e.kind != Element::Ref) break;
        if (mark[e.value] == 1)
          fail("grammar: rule '", g_.names[e.value],
               "' is left-recursive (it can reach itself before matching any byte; a repetition of something "
               "that can match nothing does this too)");
        if (mark[e.value] == 0) visit(e.value);
        if (!nullable[e.value]) break;
      }
    mark[r] = 2;
  };
  for (uint32_t r = 0; r < n; ++r)
    if (mark[r] == 0) visit(r);

  g_.rules.assign(n, {});
  for (uint32_t r = 0; r < n; ++r)
    for (const auto& alt : pending_[r]) {
      g_.rules[r].push_back(static_cast<uint32_t>(g_.elems.size()));
      g_.elems.insert(g_.elems.end(), alt.begin(), alt.end());
      g_.elems.push_back({Element::End, 0});
    }
  pending_.clear();
  return std::move(g_);
}

}  // namespace triattn::grammar
