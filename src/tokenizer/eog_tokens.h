#pragma once
// Texts of special tokens that end a turn in common chat formats. Vocabularies rarely list
// all of them in metadata (Phi-3 marks only <|endoftext|> as EOS but ends turns with
// <|end|>), so generation must stop on any of these when they are special tokens.
#include <string_view>

namespace triattn {

bool is_end_of_turn_text(std::string_view text);

}  // namespace triattn
