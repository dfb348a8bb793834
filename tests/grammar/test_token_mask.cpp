// The vocabulary mask against a brute-force reference: a token is allowed iff feeding its
// bytes keeps the recognizer alive (end-of-generation iff the grammar is complete), on a
// byte-level BPE vocabulary and a SentencePiece one with byte fallback, at states inside
// strings, numbers, enums and between characters of a multi-byte UTF-8 sequence.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "grammar/constraint.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace triattn::grammar::test {
namespace {

const std::string kShared = TRIATTN_SHARED_DIR;

std::shared_ptr<const VocabTrie> vocab_of(const std::string& path) {
  auto tok = load_tokenizer_any(path);
  return std::make_shared<const VocabTrie>(VocabTrie::from_tokenizer(*tok));
}

const char* kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 12},
  "kind": {"enum": ["cat", "dog", "café"]},
  "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 3},
  "score": {"type": "number"}},
  "required": ["name", "kind"]})";
const char* kInstance = R"({"name": "Zoë 日本", "kind": "café", "age": 42, "tags": ["ab", "c"], "score": -1.5e3})";

// The mask at the state after `prefix` against feeding every token's bytes one by one.
void expect_mask_matches_reference(TokenMasker& m, const std::string& prefix) {
  const Recognizer& rec = m.recognizer();
  StackSet state = rec.initial();
  ASSERT_TRUE(rec.advance(state, prefix)) << "prefix " << prefix;
  const TokenBits& mask = m.mask(state);
  const VocabTrie& v = m.vocab();
  size_t allowed = 0;
  for (size_t id = 0; id < v.vocab_size(); ++id) {
    const bool eog = std::find(v.eog().begin(), v.eog().end(), static_cast<int32_t>(id)) != v.eog().end();
    bool expect;
    if (eog) {
      expect = state.complete;
    } else if (v.bytes(static_cast<int32_t>(id)).empty()) {
      expect = false;  // control tokens spell nothing and are never allowed
    } else {
      StackSet s = state;
      expect = rec.advance(s, v.bytes(static_cast<int32_t>(id)));
    }
    allowed += expect;
    ASSERT_EQ(test_bit(mask, id), expect) << "token " << id << " '" << v.bytes(static_cast<int32_t>(id))
                                          << "' after '" << prefix << "'";
  }
  EXPECT_GT(allowed, 0u) << prefix;
}

void check_vocabulary(const std::string& path) {
  auto vocab = vocab_of(path);
  auto g = std::make_shared<const Grammar>(parse_gbnf(json_schema_to_gbnf(nlohmann::ordered_json::parse(kSchema))));
  TokenMasker m(g, vocab);
  const std::string text = kInstance;
  // Every byte prefix, mid-character ones included ("Zoë", "日本", "café" are multi-byte).
  for (size_t n = 0; n <= text.size(); ++n) expect_mask_matches_reference(m, text.substr(0, n));
}

TEST(TokenMask, MatchesBruteForceByteLevelBpe) { check_vocabulary(kShared + "/tokenizers/ggml-vocab-gpt-2.gguf"); }

TEST(TokenMask, MatchesBruteForceSentencePieceByteFallback) {
  check_vocabulary(kShared + "/tokenizers/ggml-vocab-llama-spm.gguf");
}

TEST(TokenMask, GbnfGrammarMatchesBruteForce) {
  auto vocab = vocab_of(kShared + "/tokenizers/ggml-vocab-gpt-2.gguf");
  auto g = std::make_shared<const Grammar>(parse_gbnf(R"g(root ::= item ("," " "? item)*
item ::= [0-9]+ | "\"" [^"]* "\"" | "(" root ")")g"));
  TokenMasker m(g, vocab);
  // Deep nesting: tokens such as "))," close several rules, past the cached context.
  for (const std::string p : {"", "1", "12,", "12, \"a b", "(3, (\"x\"", "(3, (\"x\"),", "((((((1", "((((((1)))", "(((\"a"})
    expect_mask_matches_reference(m, p);
}

int32_t byte_token(const VocabTrie& v, uint8_t b) {
  for (size_t id = 0; id < v.vocab_size(); ++id)
    if (v.bytes(static_cast<int32_t>(id)) == std::string(1, static_cast<char>(b))) return static_cast<int32_t>(id);
  return -1;
}

TEST(TokenMask, MultiByteCharacterSplitAcrossTokens) {
  auto vocab = vocab_of(kShared + "/tokenizers/ggml-vocab-llama-spm.gguf");
  auto g = std::make_shared<const Grammar>(parse_gbnf("root ::= \"\xE6\x97\xA5\" \"!\""));  // 日!
  Constraint c(std::make_shared<TokenMasker>(g, vocab));
  const int32_t e6 = byte_token(*vocab, 0xE6), x97 = byte_token(*vocab, 0x97), xa5 = byte_token(*vocab, 0xA5);
  ASSERT_GE(e6, 0);
  ASSERT_GE(x97, 0);
  ASSERT_GE(xa5, 0);
  EXPECT_TRUE(test_bit(c.allowed(), static_cast<size_t>(e6)));
  EXPECT_FALSE(test_bit(c.allowed(), static_cast<size_t>(x97)));
  ASSERT_TRUE(c.accept(e6));
  EXPECT_TRUE(test_bit(c.allowed(), static_cast<size_t>(x97)));
  EXPECT_FALSE(test_bit(c.allowed(), static_cast<size_t>(xa5)));
  EXPECT_FALSE(c.accept(xa5));  // refused, and the state stays where it was
  ASSERT_TRUE(c.accept(x97));
  ASSERT_TRUE(c.accept(xa5));
  EXPECT_FALSE(c.complete());
}

TEST(TokenMask, EndOfGenerationOnlyWhenComplete) {
  auto vocab = vocab_of(kShared + "/tokenizers/ggml-vocab-gpt-2.gguf");
  ASSERT_FALSE(vocab->eog().empty());
  const int32_t eog = vocab->eog().front();
  auto g = std::make_shared<const Grammar>(parse_gbnf(R"(root ::= "ab" "c"?)"));
  Constraint c(std::make_shared<TokenMasker>(g, vocab));
  EXPECT_FALSE(test_bit(c.allowed(), static_cast<size_t>(eog)));
  EXPECT_FALSE(c.accept(eog));
  const int32_t a = byte_token(*vocab, 'a'), b = byte_token(*vocab, 'b'), cc = byte_token(*vocab, 'c');
  ASSERT_TRUE(c.accept(a));
  EXPECT_FALSE(test_bit(c.allowed(), static_cast<size_t>(eog)));
  ASSERT_TRUE(c.accept(b));
  EXPECT_TRUE(c.complete());
  EXPECT_FALSE(c.finished());
  EXPECT_TRUE(test_bit(c.allowed(), static_cast<size_t>(eog)));
  EXPECT_TRUE(test_bit(c.allowed(), static_cast<size_t>(cc)));
  ASSERT_TRUE(c.accept(cc));
  EXPECT_TRUE(c.finished());  // only the end may follow
  const TokenBits& last = c.allowed();
  size_t n = 0;
  for (size_t id = 0; id < vocab->vocab_size(); ++id) n += test_bit(last, id);
  EXPECT_EQ(n, vocab->eog().size());
  EXPECT_TRUE(c.accept(eog));
}

TEST(TokenMask, ForkedConstraintsWalkOnTheirOwn) {
  auto vocab = vocab_of(kShared + "/tokenizers/ggml-vocab-gpt-2.gguf");
  auto g = std::make_shared<const Grammar>(parse_gbnf(R"(root ::= "x" ("1" | "2"))"));
  Constraint a(std::make_shared<TokenMasker>(g, vocab));
  ASSERT_TRUE(a.accept(byte_token(*vocab, 'x')));
  Constraint b = a;
  ASSERT_TRUE(a.accept(byte_token(*vocab, '1')));
  EXPECT_TRUE(b.accept(byte_token(*vocab, '2')));
  EXPECT_TRUE(a.finished() && b.finished());
}

TEST(TokenMask, RefusesWhatTheVocabularyCannotSpell) {
  auto tiny = vocab_of(kShared + "/models/tinystories-656k");
  const Grammar obj = parse_gbnf(json_object_gbnf());
  try {
    check_spellable(obj, *tiny);
    FAIL() << "TinyStories-656K has no token for '{'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no token holds '{'"), std::string::npos) << e.what();
  }
  // An optional part it cannot spell is no reason to refuse.
  EXPECT_NO_THROW(check_spellable(parse_gbnf(R"(root ::= "{"? "a")"), *tiny));
  EXPECT_NO_THROW(check_spellable(obj, *vocab_of(kShared + "/tokenizers/ggml-vocab-gpt-2.gguf")));
}

}  // namespace
}  // namespace triattn::grammar::test
