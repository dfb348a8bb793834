#pragma once
// Exercises a freshly loaded tokenizer the way the runtime does: encode a fixed sample (with
// and without special-token parsing), decode the result, decode every id in range and a few
// out of range (those must be refused by name, never read out of bounds), stream-decode.
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

namespace triattn::fuzz {

inline void probe_tokenizer(const Tokenizer& tok, std::string_view extra = {}) {
  static const std::string sample =
      "Once upon a time, <s> there was <|im_end|> a little   cat.\n\n\tÜnïcödé 日本語 🙂 123 4567 "
      "don't I'll \xff\xfe <0x41> ▁x";
  std::string text = sample;
  text.append(extra.substr(0, 256));
  for (bool special : {false, true}) {
    const std::vector<int32_t> ids = tok.encode(text, true, special);
    (void)tok.decode(ids, special);
    StreamDecoder sd(tok);
    for (int32_t id : ids) (void)sd.push(id);
    (void)sd.flush();
  }
  const int32_t n = tok.vocab_size();
  const int32_t step = n > 4096 ? n / 4096 : 1;
  for (int32_t id = 0; id < n; id += step) {
    (void)tok.token_to_bytes(id, true);
    (void)tok.token_text(id);
  }
  for (int32_t id : {-1, n, n + 1}) {
    try { (void)tok.token_to_bytes(id); } catch (const Error&) {}
  }
  (void)tok.is_eog(tok.eos_id());
}

}  // namespace triattn::fuzz
