#pragma once
// A small hand-made SentencePiece vocabulary for unit tests: <unk>, <s>, </s>, the 256
// <0xNN> byte tokens (ids 3..258), then the pieces given with their scores.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/spm_tokenizer.h"

namespace triattn::testing {

inline SpmVocab make_test_vocab(const std::vector<std::pair<std::string, float>>& pieces) {
  SpmVocab v;
  v.source = "test-vocab";
  v.pieces = {"<unk>", "<s>", "</s>"};
  v.types = {TokenType::Unknown, TokenType::Control, TokenType::Control};
  v.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.pieces.push_back(buf);
    v.types.push_back(TokenType::Byte);
    v.scores.push_back(0);
  }
  for (const auto& [p, s] : pieces) {
    v.pieces.push_back(p);
    v.types.push_back(TokenType::Normal);
    v.scores.push_back(s);
  }
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  return v;
}

inline constexpr int32_t kFirstPiece = 259;  // id of the first piece passed to make_test_vocab

}  // namespace triattn::testing
