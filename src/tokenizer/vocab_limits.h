#pragma once
// How far the token ids of an HF vocabulary (tokenizer.json, vocab.json, added tokens) may
// run past the tokens it lists. Every id up to the largest costs a table entry (its text, its
// kind, a placeholder for a hole), so a file of a few bytes naming id 16,000,000 once made
// the loaders build 16M-entry tables (2.2 GB under ASan; found by fuzz_vocab_merges). Real
// vocabularies are dense or leave a few reserved ids; this keeps the tables proportional to
// the file.
#include <cstdint>

namespace triattn {

inline constexpr int64_t kMaxVocabHoles = int64_t{1} << 16;

}  // namespace triattn
