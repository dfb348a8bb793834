#pragma once
// The parts of an HF model directory's tokenizer_config.json (and generation_config.json)
// that the tokenizers need: BOS/EOS policy and texts, the chat template, extra EOS ids.
// Shared by the SentencePiece and byte-level BPE loaders.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace triattn {

struct HfTokenizerConfig {
  std::optional<bool> add_bos_token, add_eos_token;
  std::optional<std::string> bos_token, eos_token, unk_token, pad_token;  // token texts
  std::string chat_template;              // "" when none ("default" entry of a list)
  std::vector<int32_t> generation_eos_ids;  // generation_config.json eos_token_id(s)
};

// Missing files give an empty config; malformed JSON raises Error naming the file.
HfTokenizerConfig read_hf_tokenizer_config(const std::string& dir);

}  // namespace triattn
