// SpmTokenizer rules on hand-made vocabularies: score-driven merging and its tie-break,
// byte fallback, special/user-defined token splitting, the dummy prefix, rank-driven merges.
#include <gtest/gtest.h>

#include "core/error.h"
#include "spm_test_vocab.h"
#include "tokenizer/spm_tokenizer.h"

namespace triattn {
namespace {

using testing::kFirstPiece;
using testing::make_test_vocab;
using Ids = std::vector<int32_t>;

// Piece ids: ▁=259 a=260 b=261 c=262 ab=263 bc=264 ▁a=265
SpmVocab abc_vocab(float ab_score, float bc_score) {
  return make_test_vocab({{"▁", -10}, {"a", -1}, {"b", -1}, {"c", -1}, {"ab", ab_score},
                          {"bc", bc_score}, {"▁a", -20}});
}
constexpr int32_t kMeta = kFirstPiece, kA = kFirstPiece + 1, kC = kFirstPiece + 3,
                  kAB = kFirstPiece + 4, kBC = kFirstPiece + 5, kMetaA = kFirstPiece + 6;

TEST(SpmScoreMerge, HighestScoringPairMergesFirst) {
  SpmTokenizer tok(abc_vocab(-5, -2));
  // "▁abc": bc (-2) beats ab (-5) and ▁a (-20); then ▁a is the only pair left.
  EXPECT_EQ(tok.encode("abc", false), (Ids{kMetaA, kBC}));
  SpmTokenizer tok2(abc_vocab(-2, -5));
  // ab wins now; "▁" + "ab" is not a piece, so ▁ stays alone.
  EXPECT_EQ(tok2.encode("abc", false), (Ids{kMeta, kAB, kC}));
}

TEST(SpmScoreMerge, EqualScoresMergeLeftmostFirst) {
  SpmTokenizer tok(abc_vocab(-3, -3));
  EXPECT_EQ(tok.encode("abc", false), (Ids{kMeta, kAB, kC}));
}

TEST(SpmScoreMerge, DummyPrefixAndSpacesBecomeMetaSpace) {
  SpmTokenizer tok(abc_vocab(-5, -2));
  EXPECT_EQ(tok.encode("a a", true), (Ids{1, kMetaA, kMetaA}));
  EXPECT_EQ(tok.encode("", true), (Ids{1}));
  EXPECT_EQ(tok.encode("", false), Ids{});
  SpmVocab no_prefix = abc_vocab(-5, -2);
  no_prefix.space_prefix = SpacePrefix::Never;
  SpmTokenizer tok2(std::move(no_prefix));
  EXPECT_EQ(tok2.encode("a a", false), (Ids{kA, kMetaA}));
  EXPECT_EQ(tok2.decode(tok2.encode(" a", false)), " a");  // nothing to strip without a prefix
}

TEST(SpmScoreMerge, UnknownCharactersFallBackToBytes) {
  SpmTokenizer tok(abc_vocab(-5, -2));
  // é is C3 A9; byte token id = 3 + byte.
  EXPECT_EQ(tok.encode("é", false), (Ids{kMeta, 3 + 0xC3, 3 + 0xA9}));
  // An invalid UTF-8 byte also becomes its byte token instead of swallowing its neighbours.
  EXPECT_EQ(tok.encode(std::string("\xFF") + "a", false), (Ids{kMeta, 3 + 0xFF, kA}));
  EXPECT_EQ(tok.decode(tok.encode("é\xFF" "a", false)), "é\xFF" "a");
}

TEST(SpmScoreMerge, WithoutByteTokensUnknownTextIsUnk) {
  SpmVocab v;
  v.source = "tiny";
  v.pieces = {"<unk>", "▁", "a"};
  v.types = {TokenType::Unknown, TokenType::Normal, TokenType::Normal};
  v.unk = 0;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(tok.encode("a日本a", false), (Ids{1, 2, 0, 2}));  // a fused <unk> for the run
  EXPECT_EQ(tok.decode(Ids{2, 0}), "a\xE2\x96\x85");         // <unk> shows as U+2585
}

TEST(SpmSpecial, ControlTokensOnlyWithParseSpecial) {
  SpmTokenizer tok(abc_vocab(-5, -2));
  EXPECT_EQ(tok.encode("a</s>a", false, true), (Ids{kMetaA, 2, kMetaA}));  // prefix again after it
  const Ids spelled = tok.encode("a</s>", false, false);
  EXPECT_EQ(std::find(spelled.begin(), spelled.end(), 2), spelled.end());
  EXPECT_EQ(tok.decode(spelled), "a</s>");
  EXPECT_EQ(tok.decode(Ids{kMetaA, 2}), "a");
  EXPECT_EQ(tok.decode(Ids{kMetaA, 2}, true), "a</s>");
}

TEST(SpmSpecial, UserDefinedTokensAlwaysMatchAndLongestWins) {
  SpmVocab v = abc_vocab(-5, -2);
  v.pieces.push_back("<|x|>");
  v.types.push_back(TokenType::UserDefined);
  v.scores.push_back(0);
  v.pieces.push_back("<|x|>y");
  v.types.push_back(TokenType::Control);
  v.scores.push_back(0);
  const int32_t x = static_cast<int32_t>(v.pieces.size()) - 2, xy = x + 1;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(tok.encode("a<|x|>", false, false), (Ids{kMetaA, x}));
  EXPECT_EQ(tok.encode("<|x|>y", false, true), (Ids{xy}));
  EXPECT_EQ(tok.token_type(x), TokenType::UserDefined);
  EXPECT_EQ(tok.decode(Ids{kMetaA, x}), "a<|x|>");  // user-defined text is real text
}

TEST(SpmSpecial, StripFlagsEatWhitespace) {
  SpmVocab v = abc_vocab(-5, -2);
  v.pieces.push_back("<|end|>");
  v.types.push_back(TokenType::Control);
  v.scores.push_back(0);
  const int32_t end = static_cast<int32_t>(v.pieces.size()) - 1;
  v.specials = {{"<|end|>", end, false, /*lstrip=*/false, /*rstrip=*/true}};
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(tok.encode("a<|end|> \n a", false, true), (Ids{kMetaA, end, kMetaA}));
  EXPECT_TRUE(tok.is_eog(end));  // <|end|> is a known end-of-turn marker
  EXPECT_TRUE(tok.is_eog(2));
  EXPECT_FALSE(tok.is_eog(kMetaA));
}

TEST(SpmDecode, LeadingSpaceDroppedOnlyAtStartOrAfterBos) {
  SpmTokenizer tok(abc_vocab(-5, -2));
  EXPECT_EQ(tok.decode(Ids{kMetaA, kMetaA}), "a a");
  EXPECT_EQ(tok.decode(Ids{1, kMetaA, kMetaA}), "a a");
  EXPECT_EQ(tok.decode(Ids{kA, kMetaA}), "a a");
  // " a" = ▁▁a: the first ▁ is the dummy prefix, the second is the text's own space.
  EXPECT_EQ(tok.encode(" a", false), (Ids{kMeta, kMetaA}));
  EXPECT_EQ(tok.decode(tok.encode(" a", true)), " a");
}

TEST(SpmRankMerge, MergeListOrderDecidesNotScores) {
  SpmVocab v = abc_vocab(-1, -1);
  v.use_merges = true;
  v.merges = {{"b", "c"}, {"a", "b"}, {"▁", "a"}};
  SpmTokenizer tok(std::move(v));
  // bc (rank 0) first, then ▁a (rank 2); ab never applies because b is gone.
  EXPECT_EQ(tok.encode("abc", false), (Ids{kMetaA, kBC}));
}

TEST(SpmRankMerge, MergeOfUnknownPieceIsAnError) {
  SpmVocab v = abc_vocab(-1, -1);
  v.use_merges = true;
  v.merges = {{"c", "a"}};
  EXPECT_THROW(SpmTokenizer{std::move(v)}, Error);
}

TEST(SpmVocabChecks, InconsistentVocabulariesAreErrors) {
  SpmVocab v = abc_vocab(-1, -1);
  v.scores.pop_back();
  EXPECT_THROW(SpmTokenizer{v}, Error);
  SpmVocab w = abc_vocab(-1, -1);
  w.bos = 100000;
  try {
    SpmTokenizer t{w};
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("BOS"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test-vocab"), std::string::npos) << e.what();
  }
  SpmTokenizer ok(abc_vocab(-1, -1));
  EXPECT_THROW(ok.token_to_bytes(-1), Error);
  EXPECT_THROW(ok.token_text(ok.vocab_size()), Error);
}

}  // namespace
}  // namespace triattn
