#include "grammar/vocab_trie.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace triattn::grammar {

VocabTrie::VocabTrie(std::vector<std::string> token_bytes, std::vector<int32_t> eog)
    : bytes_(std::move(token_bytes)), eog_(std::move(eog)) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < bytes_.size(); ++i)
    if (!bytes_[i].empty() && bytes_[i].size() < 65535) ids.push_back(static_cast<int32_t>(i));
  // Sorted by bytes, the tokens come in depth-first trie order; each new token adds the
  // nodes past its common prefix with the one before.
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return bytes_[a] < bytes_[b]; });
  nodes_.push_back({0, 0, 0, 0});
  std::vector<uint32_t> path = {0};  // node at each depth of the current token
  std::string prev;
  for (int32_t id : ids) {
    const std::string& s = bytes_[static_cast<size_t>(id)];
    size_t common = 0;
    while (common < prev.size() && common < s.size() && prev[common] == s[common]) ++common;
    path.resize(common + 1);
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back({0, static_cast<uint32_t>(order_.size()), static_cast<uint16_t>(d + 1), static_cast<uint8_t>(s[d])});
    }
    order_.push_back(id);
    max_depth_ = std::max(max_depth_, s.size());
    prev = s;
    for (unsigned char c : s) spelled_[c >> 6] |= uint64_t{1} << (c & 63);
  }
  // Subtree ends: a node's subtree ends at the next node no deeper than it.
  std::vector<uint32_t> open;
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    while (!open.empty() && nodes_[open.back()].depth >= nodes_[i].depth) {
      nodes_[open.back()].end = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  for (uint32_t i : open) nodes_[i].end = static_cast<uint32_t>(nodes_.size());
}

VocabTrie VocabTrie::from_tokenizer(const Tokenizer& tok, size_t size) {
  std::vector<std::string> bytes(std::max(size, static_cast<size_t>(tok.vocab_size())));
  for (int32_t i = 0; i < tok.vocab_size(); ++i) {
    // A token that renders differently as special (control, unknown: <unk> decodes to a
    // placeholder glyph) is not text the grammar may place; ordinary and byte tokens render
    // the same either way.
    std::string b = tok.token_to_bytes(i);
    if (b == tok.token_to_bytes(i, /*render_special=*/true)) bytes[static_cast<size_t>(i)] = std::move(b);
  }
  for (int32_t id : tok.eog_ids()) bytes[static_cast<size_t>(id)].clear();  // never text
  return VocabTrie(std::move(bytes), tok.eog_ids());
}

}  // namespace triattn::grammar
