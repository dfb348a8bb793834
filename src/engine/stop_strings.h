#pragma once
// Stop strings over streamed text (generate --stop, the server's "stop"): generation ends
// before the first occurrence of any of them, and that occurrence is not part of the text.
// Text that could still turn out to be the start of a stop string is held back until it
// cannot, so a stream never shows text that the final result drops.
#include <string>
#include <vector>

namespace triattn {

class StopStrings {
 public:
  // Empty strings are ignored (they would match everywhere).
  explicit StopStrings(std::vector<std::string> stops = {});

  struct Step {
    std::string text;      // safe to show now
    bool stopped = false;  // a stop string was found: text ends right before it
  };
  // Adds a piece of generated text. After a stop, further pushes return nothing.
  Step push(const std::string& piece);
  // The text still held back (at the end of generation, when no stop string came).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace triattn
