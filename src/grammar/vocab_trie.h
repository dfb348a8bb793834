#pragma once
// A vocabulary as a byte trie, for walking every token against a grammar state at once: a
// subtree whose prefix the grammar rejects is skipped whole. Nodes are stored in depth-first
// order with the index just past their subtree, so the walk is one pass over an array, and
// the tokens of a subtree are one contiguous run of `order`.
// Built once per vocabulary (the server keeps one); immutable afterwards.
#include <cstdint>
#include <string>
#include <vector>

namespace triattn {
class Tokenizer;
}

namespace triattn::grammar {

class VocabTrie {
 public:
  struct Node {
    uint32_t end;          // first node after this subtree
    uint32_t tok_begin;    // this node's tokens: order[tok_begin, next node's tok_begin)
    uint16_t depth;        // bytes from the root (1 for the root's children)
    uint8_t byte;
  };
  // token_bytes[id]: what token id spells; an empty string is a token that spells nothing
  // (control tokens): it is never in the trie. eog: the end-of-generation ids.
  VocabTrie(std::vector<std::string> token_bytes, std::vector<int32_t> eog);
  // size: the model's vocabulary (its logits), which may pad the tokenizer's with ids that
  // spell nothing; 0 = the tokenizer's own size.
  static VocabTrie from_tokenizer(const Tokenizer& tok, size_t size = 0);

  size_t vocab_size() const { return bytes_.size(); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& eog() const { return eog_; }
  const std::vector<Node>& nodes() const { return nodes_; }  // nodes_[0] is the root
  const std::vector<int32_t>& order() const { return order_; }
  // Node i's own tokens are order[nodes[i].tok_begin, tokens_end(i)); its descendants' are
  // order[tokens_end(i), subtree_tokens_end(i)).
  uint32_t tokens_end(uint32_t i) const { return token_start(i + 1); }
  uint32_t subtree_tokens_end(uint32_t i) const { return token_start(nodes_[i].end); }
  size_t max_depth() const { return max_depth_; }
  // Does some token spell this byte anywhere? (The feasibility check.)
  bool spells(uint8_t b) const { return (spelled_[b >> 6] >> (b & 63)) & 1; }

 private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> eog_;
  std::vector<Node> nodes_;
  std::vector<int32_t> order_;  // token ids in trie order
  size_t max_depth_ = 0;
  uint32_t token_start(uint32_t node) const {
    return node < nodes_.size() ? nodes_[node].tok_begin : static_cast<uint32_t>(order_.size());
  }
  uint64_t spelled_[4] = {0, 0, 0, 0};
};

}  // namespace triattn::grammar
