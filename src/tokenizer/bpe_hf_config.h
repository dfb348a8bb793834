#pragma once
// Pieces the byte-level BPE loaders share for HF-style directories (tokenizer.json,
// vocab.json + merges.txt, tiktoken with a tokenizer_config.json next to it). The common
// BOS/EOS/template fields come from hf_tokenizer_config.h; this adds what only BPE needs.
#include <string>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/hf_tokenizer_config.h"

namespace triattn {

struct BpeAddedToken {
  int32_t id = -1;
  std::string content;
  bool special = true;
  bool lstrip = false, rstrip = false;
};

// tokenizer_config.json fields beyond HfTokenizerConfig.
struct BpeHfExtras {
  std::vector<BpeAddedToken> added_tokens;  // added_tokens_decoder
  std::string tokenizer_class;              // e.g. "Qwen2Tokenizer"
};
// Empty when <dir>/tokenizer_config.json does not exist; Error when it is malformed.
BpeHfExtras read_bpe_hf_extras(const std::string& dir);

// Puts added tokens into the spec (extending the vocabulary when their ids are past its
// end; holes become Unused placeholders), marking them Control (special) or UserDefined.
void apply_added_tokens(BpeSpec& spec, const std::vector<BpeAddedToken>& added);
// Id of the token whose stored text is `text`, or -1; non-normal tokens win over normal ones.
int32_t find_token_id(const BpeSpec& spec, const std::string& text);
// BOS/EOS/UNK ids, add_bos, the chat template and generation_config EOS ids, where given.
void apply_hf_config(BpeSpec& spec, const HfTokenizerConfig& cfg);

}  // namespace triattn
