#pragma once
// Splits a Jinja template into text and tag tokens, applying the whitespace rules of the
// transformers chat environment: trim_blocks and lstrip_blocks on, keep_trailing_newline off,
// plus the per-tag `-` (strip) and `+` (keep) markers.
#include <string>
#include <vector>

namespace triattn::jinja {

enum class TokKind {
  Text,        // literal output
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,      // text holds the unescaped value
  Int,
  Float,
  Op,          // text holds the operator: + - * / // % ** ~ ( ) [ ] { } , . : | = == != < <= > >=
  Eof,
};

struct Token {
  TokKind kind;
  std::string text;
  int line;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws Error("chat template line N: ...") on an unterminated tag, string or comment.
std::vector<Token> lex(const std::string& source, const LexOptions& opt = {});

}  // namespace triattn::jinja
