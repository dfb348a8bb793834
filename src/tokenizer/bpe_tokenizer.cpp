#include "tokenizer/bpe_tokenizer.h"

#include <cstdint>
#include <algorithm>

#include "core/error.h"
#include "tokenizer/bpe_added_tokens.h"
#include "tokenizer/bpe_byte_map.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/eog_tokens.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/special_split.h"

namespace triattn {
namespace {

// End-of-turn texts beyond the shared list: DeepSeek-Coder-Instruct ends turns with <|EOT|>.
bool ends_turn(const std::string& text) { return is_end_of_turn_text(text) || text == "<|EOT|>"; }

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(const BpeSpec& spec);

  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const override;
  std::string token_to_bytes(int32_t id, bool render_special) const override;
  std::string decode(std::span<const int32_t> ids, bool render_special) const override;
  int32_t vocab_size() const override { return int32_t(texts_.size()); }
  std::string token_text(int32_t id) const override;

 private:
  void check_id(int32_t id) const;
  void encode_raw(std::string_view text, std::vector<int32_t>& out) const;

  std::vector<std::string> texts_;  // as stored
  std::vector<std::string> bytes_;  // what each token contributes to decoded text
  std::vector<BpeTokenKind> kinds_;
  std::vector<uint8_t> lstrip_, rstrip_;
  std::unique_ptr<BpeMerger> merger_;
  std::unique_ptr<Pretokenizer> pre_;
  AddedTokenMatcher added_;
  bool add_prefix_space_ = false;
};

BpeTokenizer::BpeTokenizer(const BpeSpec& spec) {
  const std::string& src = spec.source;
  const size_t n = spec.tokens.size();
  if (n == 0) fail(src, ": the vocabulary is empty");
  if (n > size_t(INT32_MAX)) fail(src, ": the vocabulary is too large (", n, " tokens)");
  if (!spec.kinds.empty() && spec.kinds.size() != n) {
    fail(src, ": ", spec.kinds.size(), " token types for ", n, " tokens");
  }
  texts_ = spec.tokens;
  kinds_ = spec.kinds.empty() ? std::vector<BpeTokenKind>(n, BpeTokenKind::Normal) : spec.kinds;
  lstrip_ = spec.lstrip;
  rstrip_ = spec.rstrip;
  lstrip_.resize(n, 0);
  rstrip_.resize(n, 0);

  bytes_.resize(n);
  std::vector<bool> usable(n);
  for (size_t i = 0; i < n; ++i) {
    const bool normal = kinds_[i] == BpeTokenKind::Normal;
    bytes_[i] = normal ? bpe_text_to_bytes(texts_[i]) : texts_[i];
    usable[i] = normal;
  }

  auto check_special = [&](int32_t id, const char* what) {
    if (id < -1 || id >= int32_t(n)) fail(src, ": ", what, " token id ", id, " is outside the vocabulary (", n, " tokens)");
    return id;
  };
  bos_id_ = check_special(spec.bos_id, "BOS");
  eos_id_ = check_special(spec.eos_id, "EOS");
  const int32_t eot = check_special(spec.eot_id, "EOT");
  const int32_t eom = check_special(spec.eom_id, "EOM");
  const int32_t unk = check_special(spec.unk_id, "UNK");
  add_bos_ = spec.add_bos && bos_id_ >= 0;
  chat_template_ = spec.chat_template;

  merger_ = std::make_unique<BpeMerger>(bytes_, usable, spec.ignore_merges, unk);
  if (spec.merges_from_ranks) {
    merger_->add_merges_from_ranks(bytes_);
  } else {
    for (size_t r = 0; r < spec.merges.size(); ++r) {
      const auto& [a, b] = spec.merges[r];
      if (!merger_->add_merge(bpe_text_to_bytes(a), bpe_text_to_bytes(b), int32_t(r))) {
        fail(src, ": merge ", r, " '", a, " ", b, "' names a token that is not in the vocabulary");
      }
    }
  }
  if (spec.pre_regexes.empty()) fail(src, ": no pre-tokenizer regexes");
  pre_ = std::make_unique<Pretokenizer>(spec.pre_regexes, src);
  add_prefix_space_ = spec.add_prefix_space;

  for (size_t i = 0; i < n; ++i) {
    const BpeTokenKind k = kinds_[i];
    if (k == BpeTokenKind::Control || k == BpeTokenKind::Unknown || k == BpeTokenKind::UserDefined) {
      added_.add(texts_[i], int32_t(i), k != BpeTokenKind::UserDefined);
    }
  }

  auto add_eog = [&](int32_t id) {
    if (id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) == eog_ids_.end()) eog_ids_.push_back(id);
  };
  add_eog(eos_id_);
  add_eog(eot);
  add_eog(eom);
  for (int32_t id : spec.extra_eog_ids) add_eog(check_special(id, "end-of-generation"));
  for (size_t i = 0; i < n; ++i) {
    if (kinds_[i] == BpeTokenKind::Normal) continue;
    if (ends_turn(texts_[i])) add_eog(int32_t(i));
  }
  // gpt-oss's harmony format (o200k_harmony): <|end|> closes one message (the analysis
  // channel) but the assistant's turn goes on to its final message, which ends with <|return|>,
  // or with <|call|> for a tool call. A vocabulary with both of those is harmony's: <|end|>
  // does not end generation there (as llama.cpp decides), <|call|> does.
  int32_t ret = -1, call = -1;
  for (size_t i = 0; i < n; ++i) {
    if (kinds_[i] == BpeTokenKind::Normal) continue;
    if (texts_[i] == "<|return|>") ret = int32_t(i);
    if (texts_[i] == "<|call|>") call = int32_t(i);
  }
  if (ret >= 0 && call >= 0) {
    // Its structure tokens are text of the reply: decoded output keeps them, so the server can
    // tell the analysis channel (reasoning) from the final one (server/reasoning_split.h).
    // They stay special for encoding (registered above).
    for (size_t i = 0; i < n; ++i)
      if (kinds_[i] == BpeTokenKind::Control &&
          (texts_[i] == "<|channel|>" || texts_[i] == "<|message|>" || texts_[i] == "<|start|>" ||
           texts_[i] == "<|end|>" || texts_[i] == "<|constrain|>"))
        kinds_[i] = BpeTokenKind::UserDefined;
    add_eog(call);
    eog_ids_.erase(std::remove_if(eog_ids_.begin(), eog_ids_.end(),
                                  [&](int32_t id) { return id != eos_id_ && texts_[size_t(id)] == "<|end|>"; }),
                   eog_ids_.end());
  }
}

void BpeTokenizer::encode_raw(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string prefixed;
  if (add_prefix_space_ && text[0] != ' ') {
    prefixed = " ";
    prefixed += text;
    text = prefixed;
  }
  std::vector<std::string_view> pieces;
  pre_->split(text, pieces);
  for (auto p : pieces) merger_->encode(p, out);
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
  size_t raw_start = 0, pos = 0;
  while (pos < text.size()) {
    if (!added_.may_start(uint8_t(text[pos]))) {
      ++pos;
      continue;
    }
    const auto m = added_.match_at(text, pos, parse_special);
    if (m.id < 0) {
      ++pos;
      continue;
    }
    size_t raw_end = pos, next = pos + m.len;
    if (lstrip_[m.id]) {
      while (raw_end > raw_start && is_strip_space(text[raw_end - 1])) --raw_end;
    }
    if (rstrip_[m.id]) {
      while (next < text.size() && is_strip_space(text[next])) ++next;
    }
    encode_raw(text.substr(raw_start, raw_end - raw_start), out);
    out.push_back(m.id);
    raw_start = pos = next;
  }
  encode_raw(text.substr(raw_start), out);
  return out;
}

void BpeTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= int32_t(texts_.size())) {
    fail("token id ", id, " is outside the vocabulary (", texts_.size(), " tokens)");
  }
}

std::string BpeTokenizer::token_to_bytes(int32_t id, bool render_special) const {
  check_id(id);
  switch (kinds_[id]) {
    case BpeTokenKind::Normal:
    case BpeTokenKind::UserDefined:
      return bytes_[id];
    default:
      return render_special ? bytes_[id] : std::string();
  }
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  for (int32_t id : ids) out += token_to_bytes(id, render_special);
  return out;
}

std::string BpeTokenizer::token_text(int32_t id) const {
  check_id(id);
  return texts_[id];
}

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(const BpeSpec& spec) {
  return std::make_unique<BpeTokenizer>(spec);
}

}  // namespace triattn
