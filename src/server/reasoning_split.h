#pragma once
// Splits a reasoning model's reply into its reasoning ("<think> … </think>") and its answer,
// over streamed pieces, for the API's reasoning_content. A reply that starts with <think>
// (after white space) reasons until </think>; when the rendered prompt already ends inside
// <think> (DeepSeek-R1's template opens it), the reply starts in the reasoning. Text that may
// be the start of a tag is held back until it cannot be.
// gpt-oss's harmony format: a reply that starts with <|channel|> is a sequence of messages
// "<|channel|>NAME<|message|>TEXT<|end|><|start|>assistant<|channel|>…", the last one ending
// with <|return|> or <|call|> (or with the reply); the analysis channel's text is reasoning,
// every other channel's (final, commentary) content, and the framing tokens are neither.
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
  enum class State { Start, Inside, After, HarmonyHeader, HarmonyBody, HarmonyDone } state_;
  Out harmony(Out out);  // push()'s harmony states
  std::string held_;
  bool analysis_ = false;   // harmony: the current message is on the analysis channel
  bool trim_next_ = false;  // white space right after </think> is not part of the answer
};

}  // namespace triattn::server
