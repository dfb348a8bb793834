#pragma once
// Holds a reply's thinking to a number of tokens (Anthropic's thinking.budget_tokens): once
// that many tokens were generated inside a thinking block ("<think>" ... "</think>") that is
// still open, the close marker's tokens are forced, one per step, and sampling resumes after
// them. A budget of 0 closes a block as soon as it opens (thinking disabled).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace triattn {

struct ThinkingBudgetSpec {
  int64_t tokens = 0;               // thinking tokens allowed over the whole reply
  bool open_at_start = false;       // the prompt ends inside a thinking block
  std::vector<int32_t> close_ids;   // the tokens forced to close it ("</think>" and a blank line)
  std::string open = "<think>", close = "</think>";
};

class ThinkingBudget {
 public:
  explicit ThinkingBudget(const ThinkingBudgetSpec& spec);
  // The token to generate now instead of sampling, or -1.
  int32_t forced() const;
  // After every generated token, sampled or forced, with its text.
  void push(std::string_view piece);
  int64_t thinking_tokens() const { return count_; }

 private:
  const ThinkingBudgetSpec* spec_;
  bool inside_;
  int64_t count_ = 0;   // tokens generated inside thinking blocks
  int forcing_ = -1;    // index into close_ids while closing; -1: sampling
  std::string tail_;    // the text since the last marker, for the next one
};

}  // namespace triattn
