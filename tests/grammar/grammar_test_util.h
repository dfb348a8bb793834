#pragma once
// Shared by the grammar tests: does a grammar match a whole text, and is a text a live
// prefix of something it matches.
#include <string>

#include "grammar/recognizer.h"

namespace triattn::grammar::test {

inline bool matches(const Grammar& g, const std::string& text) {
  Recognizer r(g);
  StackSet s = r.initial();
  return r.advance(s, text) && s.complete;
}

inline bool live_prefix(const Grammar& g, const std::string& text) {
  Recognizer r(g);
  StackSet s = r.initial();
  return r.advance(s, text);
}

}  // namespace triattn::grammar::test
