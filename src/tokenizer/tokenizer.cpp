// Vocabulary-independent parts of Tokenizer: whole-sequence decode, end-of-generation
// lookup and the UTF-8-safe stream decoder.
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace triattn {

namespace {

// Drops the dummy-prefix space SentencePiece adds in front of the text. `at_start` is true
// for the first text-bearing token of a sequence or the first one after BOS.
void strip_dummy_prefix(const Tokenizer& tok, bool at_start, std::string& piece) {
  if (at_start && tok.strips_leading_space() && !piece.empty() && piece[0] == ' ') {
    piece.erase(0, 1);
  }
}

}  // namespace

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  // Raw bytes on purpose: decode(encode(x)) == x even for text that is not valid UTF-8.
  // StreamDecoder is the place that guarantees well-formed output.
  std::string out;
  bool at_start = true;
  for (int32_t id : ids) {
    std::string piece = token_to_bytes(id, render_special);
    const bool had_text = !piece.empty();
    strip_dummy_prefix(*this, at_start, piece);
    if (id == bos_id_) {
      at_start = true;  // a BOS in the middle starts a new sequence
    } else if (had_text) {
      at_start = false;  // even when the piece was just the stripped space
    }
    out += piece;
  }
  return out;
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

std::string StreamDecoder::push(int32_t id) {
  std::string piece = tok_.token_to_bytes(id);
  const bool had_text = !piece.empty();
  strip_dummy_prefix(tok_, after_bos_, piece);
  if (id == tok_.bos_id()) {
    after_bos_ = true;
  } else if (had_text) {
    after_bos_ = false;
  }
  pending_ += piece;

  // Emit every complete character; replace ill-formed bytes now (waiting cannot fix them);
  // keep only a truncated-but-valid tail for the next push.
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Utf8Step st = utf8_step(pending_, pos);
    if (st.kind == Utf8Scan::Incomplete) break;
    if (st.kind == Utf8Scan::Complete) {
      out.append(pending_, pos, st.len);
    } else {
      out.append(kReplacementChar);
    }
    pos += st.len;
  }
  pending_.erase(0, pos);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = utf8_sanitize(pending_);
  pending_.clear();
  return out;
}

}  // namespace triattn
