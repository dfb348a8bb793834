#pragma once
// Text <-> token ids. One interface over every vocabulary family; the factories pick the
// implementation from the model's metadata (GGUF tokenizer.ggml.model, HF tokenizer.json,
// llama2.c tokNNN.bin). Malformed vocabularies raise triattn::Error.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace triattn {

class GgufFile;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // add_bos: prepend BOS when the vocabulary has one. parse_special: substrings equal to a
  // special/control/added token's text become that token (chat templates need this).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos,
                                      bool parse_special = false) const = 0;
  // The bytes one token contributes to the text (SentencePiece ▁ -> ' ', <0xNN> -> byte,
  // byte-level BPE -> its bytes). Control tokens (BOS/EOS...) give "" unless render_special.
  virtual std::string token_to_bytes(int32_t id, bool render_special = false) const = 0;
  // Whole-sequence decode (handles the SentencePiece leading-space rule).
  virtual std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  virtual int32_t vocab_size() const = 0;
  virtual std::string token_text(int32_t id) const = 0;  // the vocabulary entry as stored
  int32_t bos_id() const { return bos_id_; }              // -1 when absent
  int32_t eos_id() const { return eos_id_; }
  bool add_bos_default() const { return add_bos_; }       // does the model ask for BOS?
  // End-of-generation tokens: EOS, EOT, <|im_end|>, <|eot_id|>, ...
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  // Optional: the chat template stored with the vocabulary ("" when none).
  const std::string& chat_template() const { return chat_template_; }
  // SentencePiece vocabularies prepend a space to the text ("dummy prefix"); decoding drops
  // one leading space from the first token of a sequence or the first token after BOS.
  bool strips_leading_space() const { return strip_leading_space_; }

 protected:
  int32_t bos_id_ = -1, eos_id_ = -1;
  bool add_bos_ = false;
  bool strip_leading_space_ = false;
  std::vector<int32_t> eog_ids_;
  std::string chat_template_;
};

// Turns a stream of token ids into text without ever emitting a broken UTF-8 sequence:
// bytes of an incomplete character are held until it completes. Ill-formed bytes (ones no
// later byte can complete) come out as U+FFFD at once.
// The dummy-prefix space is dropped only from a token that directly follows BOS: push the
// BOS (it renders as "") or pass after_bos = true when the stream starts right after it.
// By default the stream continues a prompt, so a generated "▁there" keeps its space.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool after_bos = false)
      : tok_(tok), after_bos_(after_bos) {}
  std::string push(int32_t id);  // complete UTF-8 text available so far
  std::string flush();           // whatever is left (invalid bytes replaced by U+FFFD)

 private:
  const Tokenizer& tok_;
  std::string pending_;
  bool after_bos_ = false;
};

std::unique_ptr<Tokenizer> load_tokenizer_gguf(const GgufFile& gguf);
// tokenizer.json (+ tokenizer_config.json for BOS/chat template) in an HF model directory.
std::unique_ptr<Tokenizer> load_tokenizer_hf_dir(const std::string& dir);
std::unique_ptr<Tokenizer> load_tokenizer_llama2c(const std::string& tok_bin_path);
// Just the vocabulary of whatever PATH is, without loading weights: a .gguf (model or
// vocab-only), an HF model directory, a tokenizer-only directory (tokenizer.json,
// vocab.json + merges.txt, or a tiktoken tokenizer.model), one of those files itself, a
// llama2.c tokenizer (tokNNN.bin / tokenizer.bin) or a llama2.c checkpoint (.bin, whose
// tokenizer lies beside it). Error naming the path and what was looked for otherwise.
std::unique_ptr<Tokenizer> load_tokenizer_any(const std::string& path);

}  // namespace triattn
