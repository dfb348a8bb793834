#pragma once
// Scoring of `triattn eval math`: the final answer is the last \boxed{} of the reply; it is
// compared with the reference after normalisation, so that equal answers written
// differently agree:
// - LaTeX noise dropped: $, \left/\right, \displaystyle, spacing commands (\, \; \! \quad),
//   \text{}/\mathrm{}/\textbf{}/\mbox{} unwrapped, ^\circ and \% removed, \dfrac/\tfrac ->
//   \frac, a leading "x =" dropped, whitespace and a final period removed;
// - numbers compared as exact rationals: integers (thousands separators allowed: 1,000),
//   decimals, a/b, \frac{a}{b}, \frac12, with signs; "0.5" equals "\frac{1}{2}";
// - anything else (\sqrt{2}, \pi, intervals) compared as normalised text (\sqrt2 = \sqrt{2}).
#include <optional>
#include <string>

namespace triattn::eval {

// The instruction appended to each problem (the one DeepSeek-R1 and Qwen reasoning models
// are evaluated with).
inline constexpr const char* kMathInstruction = "Please reason step by step, and put your final answer within \\boxed{}.";

std::string normalize_math_answer(const std::string& s);
bool math_answers_equal(const std::string& a, const std::string& b);
// Extracts the last \boxed{} of the reply and compares it with the reference answer.
bool math_correct(const std::string& reply, const std::string& reference);

}  // namespace triattn::eval
