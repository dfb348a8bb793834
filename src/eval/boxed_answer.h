#pragma once
// Reading a final answer out of a model's reply: the content of the last \boxed{...} (or
// \fbox{...}), braces matched, as reasoning models are asked to write it. Shared by the dfs
// and math scorers.
#include <optional>
#include <string>

namespace triattn::eval {

// The content of the last complete \boxed{...} / \fbox{...} / "\boxed X" in text, or nullopt.
std::optional<std::string> last_boxed(const std::string& text);

}  // namespace triattn::eval
