// SentencePiece vocabulary from a llama2.c tokNNN.bin: pieces spell spaces as ' ' (not ▁),
// ids 0/1/2 are <unk>, BOS, EOS, and <0xNN> pieces are byte fallback.
#include "formats/llama2c.h"
#include "tokenizer/spm_tokenizer.h"

namespace triattn {

std::unique_ptr<Tokenizer> make_spm_tokenizer_llama2c(const std::string& tok_bin_path) {
  Llama2cVocab file = Llama2cVocab::open(tok_bin_path);
  SpmVocab v;
  v.source = tok_bin_path;
  v.pieces = std::move(file.pieces);
  v.scores = std::move(file.scores);
  const size_t n = v.pieces.size();
  v.types.assign(n, TokenType::Normal);  // <0xNN> pieces become Byte in SpmTokenizer
  if (n > 0) v.types[0] = TokenType::Unknown;
  if (n > 1) v.types[1] = TokenType::Control;
  if (n > 2) v.types[2] = TokenType::Control;
  v.unk = n > 0 ? 0 : -1;
  v.bos = n > 1 ? 1 : -1;
  v.eos = n > 2 ? 2 : -1;
  v.add_bos = true;
  v.space_is_meta = false;
  v.space_prefix = SpacePrefix::EveryFragment;  // llama2.c's "dummy prefix" space
  return std::make_unique<SpmTokenizer>(std::move(v));
}

}  // namespace triattn
