// Stop strings over streamed pieces: the text ends right before the first occurrence of any
// of them, wherever the pieces split it, and nothing past it is ever released.
#include "engine/stop_strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace triattn {
namespace {

// Pushes `text` in pieces of `step` bytes; returns what was released and whether it stopped.
std::pair<std::string, bool> stream(StopStrings& s, const std::string& text, size_t step) {
  std::string out;
  for (size_t i = 0; i < text.size(); i += step) {
    const StopStrings::Step r = s.push(text.substr(i, step));
    out += r.text;
    if (r.stopped) return {out, true};
  }
  return {out + s.flush(), false};
}

TEST(StopStrings, EndsBeforeTheFirstOccurrenceWhateverThePieces) {
  const std::string text = "Once upon a time, Lily met Tom. Tom said hi.";
  for (size_t step = 1; step <= text.size(); ++step) {
    StopStrings s({"Tom", "hi"});
    const auto [out, stopped] = stream(s, text, step);
    EXPECT_TRUE(stopped) << step;
    EXPECT_EQ(out, "Once upon a time, Lily met ") << step;
  }
}

TEST(StopStrings, EarliestOfSeveralWinsAndOverlappingPrefixesAreHeld) {
  StopStrings s({"abcd", "bc"});
  EXPECT_EQ(s.push("xa").text, "x");  // "a" may start "abcd"
  const StopStrings::Step r = s.push("bcd");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");  // in "xabcd", "abcd" starts at 1, before "bc" at 2
  StopStrings t({"abcd", "bc"});
  const auto [out, stopped] = stream(t, "xabcx", 1);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "xa");  // "abcd" never completes; "bc" ends the text
}

TEST(StopStrings, HeldTextIsReleasedWhenItCannotStartAStop) {
  StopStrings s({"<|end|>"});
  EXPECT_EQ(s.push("a <|e").text, "a ");
  EXPECT_EQ(s.push("nx").text, "<|enx");
  EXPECT_EQ(s.push(" <|").text, " ");
  EXPECT_EQ(s.flush(), "<|");  // the end of the text: what was held is text after all
}

TEST(StopStrings, NoStopsPassEverythingAndEmptyStopsAreIgnored) {
  StopStrings none;
  EXPECT_EQ(none.push("abc").text, "abc");
  StopStrings empty({""});
  const auto r = empty.push("abc");
  EXPECT_EQ(r.text, "abc");
  EXPECT_FALSE(r.stopped);
}

TEST(StopStrings, NothingAfterAStop) {
  StopStrings s({"x"});
  EXPECT_TRUE(s.push("axb").stopped);
  EXPECT_EQ(s.push("more").text, "");
  EXPECT_EQ(s.flush(), "");
  EXPECT_TRUE(s.stopped());
}

}  // namespace
}  // namespace triattn
