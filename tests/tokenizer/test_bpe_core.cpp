// Byte-level BPE building blocks on small hand-made vocabularies: the GPT-2 byte alphabet,
// regex pre-tokenization, merge order, the whole-piece rule, added/special tokens, decode.
#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "tokenizer/bpe_byte_map.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pretokenize.h"

namespace triattn {
namespace {

std::vector<std::string> split(const Pretokenizer& p, std::string_view text) {
  std::vector<std::string_view> v;
  p.split(text, v);
  return {v.begin(), v.end()};
}

TEST(BpeByteMap, IsABijectionOverAllBytes) {
  std::set<uint32_t> cps;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = bpe_byte_to_codepoint(uint8_t(b));
    cps.insert(cp);
    EXPECT_EQ(bpe_codepoint_to_byte(cp), b);
  }
  EXPECT_EQ(cps.size(), 256u);
  EXPECT_EQ(bpe_byte_to_codepoint(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(bpe_byte_to_codepoint('\n'), 0x10Au);  // 'Ċ'
  EXPECT_EQ(bpe_byte_to_codepoint('A'), uint32_t('A'));
  EXPECT_EQ(bpe_codepoint_to_byte(0x4E00), -1);
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  bool mapped = false;
  EXPECT_EQ(bpe_text_to_bytes(bpe_bytes_to_text(all), &mapped), all);
  EXPECT_TRUE(mapped);
  EXPECT_EQ(bpe_bytes_to_text(" hi\n"), "\xC4\xA0hi\xC4\x8A");  // "ĠhiĊ"
}

TEST(Pretokenize, Gpt2SplitsWordsSpacesAndContractions) {
  Pretokenizer p({kGpt2PretokenizeRegex}, "test");
  EXPECT_EQ(split(p, "Hello world"), (std::vector<std::string>{"Hello", " world"}));
  // Whitespace before a word leaves its last space to the word.
  EXPECT_EQ(split(p, "a   b"), (std::vector<std::string>{"a", "  ", " b"}));
  EXPECT_EQ(split(p, "I'll go!!"), (std::vector<std::string>{"I", "'ll", " go", "!!"}));
  EXPECT_EQ(split(p, "x 123"), (std::vector<std::string>{"x", " 123"}));
  EXPECT_EQ(split(p, "Führer"), (std::vector<std::string>{"Führer"}));  // \p{L} is Unicode-aware
}

TEST(Pretokenize, FamiliesApplyRegexesInSequence) {
  auto star = pretokenizer_family("starcoder");
  ASSERT_TRUE(star);
  Pretokenizer ps(star->regexes, "starcoder");
  EXPECT_EQ(split(ps, "a 123"), (std::vector<std::string>{"a", " ", "1", "2", "3"}));
  auto falcon = pretokenizer_family("falcon");
  ASSERT_TRUE(falcon);
  Pretokenizer pf(falcon->regexes, "falcon");
  EXPECT_EQ(split(pf, "1234567"), (std::vector<std::string>{"123", "456", "7"}));
  auto llama = pretokenizer_family("llama-bpe");
  ASSERT_TRUE(llama);
  EXPECT_TRUE(llama->ignore_merges);
  EXPECT_TRUE(llama->add_bos_default);
  Pretokenizer pl(llama->regexes, "llama3");
  EXPECT_EQ(split(pl, "12345 HELLO'S"), (std::vector<std::string>{"123", "45", " HELLO", "'S"}));
  EXPECT_FALSE(pretokenizer_family("no-such-family"));
  EXPECT_TRUE(pretokenizer_family(""));  // absent key = llama.cpp's default list
}

TEST(Pretokenize, LookaheadSeesOnlyThePiece) {
  // After "[0-9]" isolates digits, "\s+(?!\S)" must treat the end of the piece "  " as
  // the end of text even though a digit follows in the original string.
  Pretokenizer p({"[0-9]", R"(\s+(?!\S)|\S+)"}, "test");
  EXPECT_EQ(split(p, "a  1"), (std::vector<std::string>{"a", "  ", "1"}));
}

TEST(Pretokenize, InvalidUtf8AndLongInputsAreSafe) {
  Pretokenizer p({kGpt2PretokenizeRegex}, "test");
  const std::string bad = "ab\xFF\xFE cd\xC3";
  std::string joined;
  for (const auto& s : split(p, bad)) joined += s;
  EXPECT_EQ(joined, bad);
  const std::string spaces(200000, ' ');
  EXPECT_EQ(split(p, spaces + "x").size(), 2u);
  EXPECT_THROW(Pretokenizer({"(unclosed"}, "test"), Error);
}

// A tiny vocabulary: bytes a, b, c, space plus merged tokens.
BpeSpec tiny_spec() {
  BpeSpec s;
  s.source = "tiny";
  s.tokens = {"a", "b", "c", "\xC4\xA0", "ab", "bc", "abc", "<s>", "</s>", "<tool>", "aa"};
  s.kinds = {BpeTokenKind::Normal, BpeTokenKind::Normal, BpeTokenKind::Normal, BpeTokenKind::Normal,
             BpeTokenKind::Normal, BpeTokenKind::Normal, BpeTokenKind::Normal, BpeTokenKind::Control,
             BpeTokenKind::Control, BpeTokenKind::UserDefined, BpeTokenKind::Normal};
  // bc before ab: "abc" becomes a + bc, and "abc" (id 6) is unreachable by merging.
  s.merges = {{"b", "c"}, {"a", "b"}, {"a", "a"}};
  s.pre_regexes = {kGpt2PretokenizeRegex};
  s.bos_id = 7;
  s.eos_id = 8;
  s.add_bos = true;
  return s;
}

TEST(BpeTokenizer, MergesByRankLeftmostFirst) {
  auto tok = make_bpe_tokenizer(tiny_spec());
  EXPECT_EQ(tok->encode("abc", false), (std::vector<int32_t>{0, 5}));
  EXPECT_EQ(tok->encode("ab", false), (std::vector<int32_t>{4}));
  EXPECT_EQ(tok->encode("aaa", false), (std::vector<int32_t>{10, 0}));  // leftmost pair first
  EXPECT_EQ(tok->encode("abc", true), (std::vector<int32_t>{7, 0, 5}));
  EXPECT_EQ(tok->encode("", false), std::vector<int32_t>{});
  EXPECT_EQ(tok->bos_id(), 7);
  EXPECT_TRUE(tok->add_bos_default());
}

TEST(BpeTokenizer, WholePieceRuleEmitsVocabularyPiecesUnmerged) {
  BpeSpec s = tiny_spec();
  s.ignore_merges = true;
  auto tok = make_bpe_tokenizer(s);
  EXPECT_EQ(tok->encode("abc", false), (std::vector<int32_t>{6}));
  EXPECT_EQ(tok->encode("abcc", false), (std::vector<int32_t>{0, 5, 2}));  // not a token: merge
}

TEST(BpeTokenizer, RanksFromIdsWhenThereIsNoMergeList) {
  BpeSpec s = tiny_spec();
  s.merges.clear();
  s.merges_from_ranks = true;  // tiktoken: "ab" (id 4) outranks "bc" (id 5)
  auto tok = make_bpe_tokenizer(s);
  EXPECT_EQ(tok->encode("abcc", false), (std::vector<int32_t>{6, 2}));
  EXPECT_EQ(tok->encode("bcab", false), (std::vector<int32_t>{5, 4}));
}

TEST(BpeTokenizer, SpecialAndAddedTokens) {
  auto tok = make_bpe_tokenizer(tiny_spec());
  // Control tokens only with parse_special; user-defined ones always.
  EXPECT_EQ(tok->encode("<s>ab", false, true), (std::vector<int32_t>{7, 4}));
  const auto literal = tok->encode("<s>ab", false, false);
  EXPECT_NE(literal.front(), 7);
  EXPECT_EQ(tok->encode("ab<tool>c", false, false), (std::vector<int32_t>{4, 9, 2}));
  // Decoding: control tokens vanish unless rendered, added tokens give their raw text.
  const std::vector<int32_t> ids{7, 4, 9, 8};
  EXPECT_EQ(tok->decode(ids), "ab<tool>");
  EXPECT_EQ(tok->decode(ids, true), "<s>ab<tool></s>");
  EXPECT_EQ(tok->token_to_bytes(3), " ");
  EXPECT_EQ(tok->token_text(3), "\xC4\xA0");
  EXPECT_THROW(tok->token_to_bytes(99), Error);
  EXPECT_THROW(tok->token_text(-1), Error);
  EXPECT_EQ(tok->eog_ids(), std::vector<int32_t>{8});
}

// gpt-oss's harmony vocabulary (it has <|return|> and <|call|>): <|end|> closes a message, not
// the turn, so it does not end generation; <|return|> and <|call|> do; the framing tokens are
// decoded as text (the server splits the channels) but are still special when encoding.
TEST(BpeTokenizer, HarmonyEndsAtReturnOrCallAndKeepsItsFraming) {
  BpeSpec s = tiny_spec();
  for (const char* t : {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>"}) {
    s.tokens.push_back(t);
    s.kinds.push_back(BpeTokenKind::Control);
  }
  s.eos_id = 15;  // <|return|>, as gpt-oss's tokenizer_config says
  auto tok = make_bpe_tokenizer(s);
  EXPECT_TRUE(tok->is_eog(15));
  EXPECT_TRUE(tok->is_eog(16));
  EXPECT_FALSE(tok->is_eog(14));  // <|end|>
  const std::vector<int32_t> ids{12, 4, 13, 0, 14, 11};
  EXPECT_EQ(tok->decode(ids), "<|channel|>ab<|message|>a<|end|><|start|>");
  EXPECT_EQ(tok->encode("<|channel|>ab", false, true), (std::vector<int32_t>{12, 4}));
  EXPECT_NE(tok->encode("<|channel|>ab", false, false).front(), 12);
  // Without <|call|> the vocabulary is not harmony's: <|end|> ends a turn (Phi-3) and stays hidden.
  BpeSpec phi = tiny_spec();
  phi.tokens.push_back("<|end|>");
  phi.kinds.push_back(BpeTokenKind::Control);
  auto p = make_bpe_tokenizer(phi);
  EXPECT_TRUE(p->is_eog(11));
  EXPECT_EQ(p->decode(std::vector<int32_t>{4, 11}), "ab");
}

TEST(BpeTokenizer, LstripRstripEatWhitespaceAroundAddedTokens) {
  BpeSpec s = tiny_spec();
  s.lstrip.assign(s.tokens.size(), 0);
  s.rstrip.assign(s.tokens.size(), 0);
  s.lstrip[9] = 1;
  s.rstrip[9] = 1;
  auto tok = make_bpe_tokenizer(s);
  EXPECT_EQ(tok->encode("a <tool> b", false), (std::vector<int32_t>{0, 9, 1}));
}

TEST(BpeTokenizer, RejectsBrokenSpecs) {
  BpeSpec s = tiny_spec();
  s.merges.push_back({"a", "zz"});  // unknown right-hand token
  EXPECT_THROW(make_bpe_tokenizer(s), Error);
  s = tiny_spec();
  s.merges.push_back({"c", "c"});  // "cc" is not a token
  EXPECT_THROW(make_bpe_tokenizer(s), Error);
  s = tiny_spec();
  s.bos_id = 1000;
  EXPECT_THROW(make_bpe_tokenizer(s), Error);
  s = tiny_spec();
  s.kinds.pop_back();
  EXPECT_THROW(make_bpe_tokenizer(s), Error);
  s = tiny_spec();
  s.pre_regexes = {"[unclosed"};
  EXPECT_THROW(make_bpe_tokenizer(s), Error);
}

}  // namespace
}  // namespace triattn
