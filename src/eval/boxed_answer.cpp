#include "eval/boxed_answer.h"

namespace triattn::eval {

std::optional<std::string> last_boxed(const std::string& text) {
  std::optional<std::string> best;
  size_t best_at = 0;
  for (const std::string tag : {"\\boxed", "\\fbox"}) {
    for (size_t at = text.find(tag); at != std::string::npos; at = text.find(tag, at + 1)) {
      size_t i = at + tag.size();
      std::optional<std::string> got;
      if (i < text.size() && text[i] == '{') {
        int depth = 0;
        for (size_t j = i; j < text.size(); ++j) {
          if (text[j] == '{') ++depth;
          else if (text[j] == '}' && --depth == 0) {
            got = text.substr(i + 1, j - i - 1);
            break;
          }
        }
      } else if (i < text.size() && text[i] == ' ') {
        // "\boxed 5": up to the next space or '$'
        const size_t end = text.find_first_of(" $\n", i + 1);
        got = text.substr(i + 1, end == std::string::npos ? std::string::npos : end - i - 1);
      }
      if (got && (!best || at >= best_at)) best = got, best_at = at;
    }
  }
  return best;
}

}  // namespace triattn::eval
