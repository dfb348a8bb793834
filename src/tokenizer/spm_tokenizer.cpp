// SpmTokenizer: vocabulary validation, special-token splitting, the dummy prefix and
// decoding. The two merge rules live in spm_merge.cpp.
#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "tokenizer/eog_tokens.h"

namespace triattn {

namespace {


// "<0x41>" -> 0x41; -1 when the piece is not a byte token's spelling.
int parse_byte_piece(const std::string& p) {
  if (p.size() != 6 || p.compare(0, 3, "<0x") != 0 || p[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = p[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (;;) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

}  // namespace

SpmTokenizer::SpmTokenizer(SpmVocab vocab) : v_(std::move(vocab)) {
  const std::string& src = v_.source;
  const size_t n = v_.pieces.size();
  if (n == 0) fail(src, ": the vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) fail(src, ": vocabulary too large (", n, " tokens)");
  if (v_.scores.empty()) v_.scores.assign(n, 0.0f);
  if (v_.types.empty()) v_.types.assign(n, TokenType::Normal);
  if (v_.scores.size() != n) {
    fail(src, ": ", v_.scores.size(), " token scores for ", n, " tokens");
  }
  if (v_.types.size() != n) {
    fail(src, ": ", v_.types.size(), " token types for ", n, " tokens");
  }
  auto check_special = [&](int32_t id, const char* what) {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      fail(src, ": ", what, " token id ", id, " is outside the vocabulary of ", n, " tokens");
    }
  };
  check_special(v_.bos, "BOS");
  check_special(v_.eos, "EOS");
  check_special(v_.unk, "unknown");
  for (int32_t id : v_.extra_eog) check_special(id, "end-of-generation");

  std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
  byte_values_.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    const std::string& p = v_.pieces[i];
    all_index_.emplace(p, id);
    const TokenType t = v_.types[i];
    // SentencePiece never produces control, unknown, unused or byte pieces by merging text;
    // those are reached only through their ids, special splitting or byte fallback.
    if (t == TokenType::Normal || t == TokenType::UserDefined) merge_index_.emplace(p, id);
    const int b = parse_byte_piece(p);
    if (b >= 0 && (t == TokenType::Byte || t == TokenType::Normal)) {
      byte_values_[i] = b;
      if (byte_ids_[b] < 0) byte_ids_[b] = id;
      v_.types[i] = TokenType::Byte;
      merge_index_.erase(p);
    }
  }
  if (v_.use_merges) {
    merge_ranks_.reserve(v_.merges.size());
    for (size_t r = 0; r < v_.merges.size(); ++r) {
      const auto& [a, b] = v_.merges[r];
      auto ia = all_index_.find(a), ib = all_index_.find(b), im = all_index_.find(a + b);
      if (ia == all_index_.end() || ib == all_index_.end() || im == all_index_.end()) {
        fail(src, ": merge #", r, " ('", a, "' '", b, "') uses a piece missing from the vocabulary");
      }
      // An earlier (lower-rank) duplicate wins, as in HF tokenizers.
      merge_ranks_.emplace(pair_key(ia->second, ib->second),
                           std::make_pair(static_cast<int32_t>(r), im->second));
    }
  }

  specials_ = v_.specials;
  if (specials_.empty()) {
    for (size_t i = 0; i < n; ++i) {
      const TokenType t = v_.types[i];
      if (t == TokenType::Control || t == TokenType::Unknown || t == TokenType::UserDefined) {
        specials_.push_back({v_.pieces[i], static_cast<int32_t>(i), t == TokenType::UserDefined});
      }
    }
  }
  for (const SpecialToken& sp : specials_) check_special(sp.id, "special");
  sort_specials(specials_);

  bos_id_ = v_.bos;
  eos_id_ = v_.eos;
  add_bos_ = v_.add_bos && v_.bos >= 0;
  strip_leading_space_ = v_.space_prefix != SpacePrefix::Never;
  chat_template_ = v_.chat_template;
  auto add_eog = [&](int32_t id) {
    if (id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) == eog_ids_.end()) {
      eog_ids_.push_back(id);
    }
  };
  add_eog(v_.eos);
  for (int32_t id : v_.extra_eog) add_eog(id);
  for (size_t i = 0; i < n; ++i) {
    const TokenType t = v_.types[i];
    if ((t == TokenType::Control || t == TokenType::UserDefined) && is_end_of_turn_text(v_.pieces[i])) {
      add_eog(static_cast<int32_t>(i));
    }
  }
  // The merge list has served its purpose (merge_ranks_ holds it by id).
  v_.merges.clear();
  v_.merges.shrink_to_fit();
}

std::vector<int32_t> SpmTokenizer::encode(std::string_view text, bool add_bos,
                                          bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
  for (const TextFragment& f : split_special_tokens(text, specials_, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
    } else {
      encode_fragment(f.text, f.offset == 0, out);
    }
  }
  return out;
}

void SpmTokenizer::encode_fragment(std::string_view text, bool at_text_start,
                                   std::vector<int32_t>& out) const {
  bool prefix = v_.space_prefix == SpacePrefix::EveryFragment ||
                (v_.space_prefix == SpacePrefix::TextStart && at_text_start);
  if (v_.prefix_unless_leading_space && !text.empty() && text[0] == ' ') prefix = false;
  std::string s;
  s.reserve(text.size() + 1);
  if (prefix) s += ' ';
  s.append(text);
  if (v_.space_is_meta) s = replace_all(s, " ", kMetaSpace);

  auto merge = [&](std::string_view word) {
    if (word.empty()) return;
    if (v_.use_merges) {
      merge_by_rank(word, out);
    } else {
      merge_by_score(word, out);
    }
  };
  if (!v_.split_words) {
    merge(s);
    return;
  }
  // HF Metaspace split: a new word starts at every "▁" (the ▁ stays with the next word).
  const std::string_view sep = v_.space_is_meta ? kMetaSpace : std::string_view(" ");
  const std::string_view all(s);
  size_t word_start = 0;
  for (size_t pos = all.find(sep, 1); pos != std::string_view::npos; pos = all.find(sep, pos + 1)) {
    merge(all.substr(word_start, pos - word_start));
    word_start = pos;
  }
  merge(all.substr(word_start));
}

void SpmTokenizer::push_bytes(std::string_view bytes, std::vector<int32_t>& out) const {
  const bool all_known = v_.byte_fallback && std::all_of(bytes.begin(), bytes.end(), [&](char c) {
    return byte_ids_[static_cast<uint8_t>(c)] >= 0;
  });
  if (all_known) {
    for (char c : bytes) out.push_back(byte_ids_[static_cast<uint8_t>(c)]);
    return;
  }
  // No byte tokens (e.g. the TinyStories vocabulary): <unk> for the character, with runs of
  // unknown characters fused into one <unk> as HF does. Without <unk> the text is dropped.
  if (v_.unk < 0) return;
  if (v_.fuse_unk && !out.empty() && out.back() == v_.unk) return;
  out.push_back(v_.unk);
}

void SpmTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    fail("token id ", id, " is outside the vocabulary of ", vocab_size(), " tokens (", v_.source, ")");
  }
}

std::string SpmTokenizer::token_text(int32_t id) const {
  check_id(id);
  return v_.pieces[id];
}

TokenType SpmTokenizer::token_type(int32_t id) const {
  check_id(id);
  return v_.types[id];
}

std::string SpmTokenizer::token_to_bytes(int32_t id, bool render_special) const {
  check_id(id);
  const std::string& p = v_.pieces[id];
  switch (v_.types[id]) {
    case TokenType::Byte:
      return std::string(1, static_cast<char>(byte_values_[id]));
    case TokenType::Control:
    case TokenType::Unused:
      return render_special ? p : std::string();
    case TokenType::Unknown:
      // llama.cpp renders <unk> as U+2585 so a reader sees that something was lost.
      return render_special ? p : std::string("\xE2\x96\x85");
    case TokenType::Normal:
    case TokenType::UserDefined:
      break;
  }
  return v_.space_is_meta ? replace_all(p, kMetaSpace, " ") : p;
}

}  // namespace triattn
