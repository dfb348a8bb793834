#pragma once
// Splits a reasoning model's reply into its reasoning ("<think> … </think>") and its answer,
// over streamed pieces, for the API's reasoning_content. A reply that starts with <think>
// (after white space) reasons until </think>; when the rendered prompt already ends inside
// <think> (DeepSeek-R1's template opens it), the reply starts in the reasoning. Text that may
// be the start of a tag is held back until it cannot be.
#include <string>

namespace triattn::server {

class ReasoningSplit {
 public:
  // enabled = false: everything is content (--reasoning-format none).
  ReasoningSplit(bool enabled, bool starts_inside);

  struct Out {
    std::string reasoning, content;
  };
  Out push(const std::string& piece);
  Out flush();  // what is held back, at the end of the reply

  // True when the prompt text ends with an open <think> (white space after it allowed).
  static bool prompt_opens_reasoning(const std::string& prompt_text);

 private:
  enum class State { Start, Inside, After } state_;
  std::string held_;
  bool trim_next_ = false;  // white space right after </think> is not part of the answer
};

}  // namespace triattn::server
