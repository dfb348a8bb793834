// StreamDecoder never emits a broken UTF-8 sequence, whatever way the bytes are split
// across tokens; utf8 helpers follow the Unicode "maximal subpart" replacement rule.
#include <gtest/gtest.h>

#include <random>

#include "spm_test_vocab.h"
#include "tokenizer/utf8.h"

namespace triattn {
namespace {

using testing::kFirstPiece;
using testing::make_test_vocab;

int32_t byte_tok(uint8_t b) { return 3 + b; }

bool well_formed(const std::string& s) { return utf8_sanitize(s) == s; }

TEST(Utf8, StepAndSanitize) {
  EXPECT_EQ(utf8_step("\xE4\xBD", 0).kind, Utf8Scan::Incomplete);
  EXPECT_EQ(utf8_step("\xE4\xBD\xA0", 0).kind, Utf8Scan::Complete);
  EXPECT_EQ(utf8_step("\xC0\x80", 0).kind, Utf8Scan::Invalid);      // overlong
  EXPECT_EQ(utf8_step("\xED\xA0\x80", 0).kind, Utf8Scan::Invalid);  // surrogate
  EXPECT_EQ(utf8_step("\xF4\x90\x80\x80", 0).kind, Utf8Scan::Invalid);  // > U+10FFFF
  // E4 BD followed by 'a': the two valid bytes are one maximal subpart -> one U+FFFD.
  EXPECT_EQ(utf8_sanitize("\xE4\xBD" "a"), "\xEF\xBF\xBD" "a");
  EXPECT_EQ(utf8_sanitize("\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_sanitize("ok 你"), "ok 你");
}

TEST(StreamDecoder, HoldsSplitCharacterUntilComplete) {
  SpmTokenizer tok(make_test_vocab({{"▁hi", -1}}));
  StreamDecoder dec(tok);
  EXPECT_EQ(dec.push(byte_tok(0xE4)), "");
  EXPECT_EQ(dec.push(byte_tok(0xBD)), "");
  EXPECT_EQ(dec.push(byte_tok(0xA0)), "你");
  EXPECT_EQ(dec.push(byte_tok(0xF0)), "");  // 🙂 = F0 9F 99 82
  EXPECT_EQ(dec.push(byte_tok(0x9F)), "");
  EXPECT_EQ(dec.push(byte_tok(0x99)), "");
  EXPECT_EQ(dec.push(byte_tok(0x82)), "🙂");
  EXPECT_EQ(dec.push(kFirstPiece), " hi");  // not after BOS: the space is real text
  EXPECT_EQ(dec.flush(), "");
}

TEST(StreamDecoder, InvalidBytesBecomeReplacementAndFlushEndsTruncation) {
  SpmTokenizer tok(make_test_vocab({{"a", -1}}));
  StreamDecoder dec(tok);
  EXPECT_EQ(dec.push(byte_tok(0xFF)), "\xEF\xBF\xBD");  // can never become valid: out at once
  EXPECT_EQ(dec.push(byte_tok(0xE4)), "");
  EXPECT_EQ(dec.push(kFirstPiece), "\xEF\xBF\xBD" "a");  // E4 cut short by 'a'
  EXPECT_EQ(dec.push(byte_tok(0xE4)), "");
  EXPECT_EQ(dec.push(byte_tok(0xBD)), "");
  EXPECT_EQ(dec.flush(), "\xEF\xBF\xBD");  // a truncated tail at the end of the stream
  EXPECT_EQ(dec.flush(), "");
}

TEST(StreamDecoder, DummyPrefixDroppedOnlyAfterBos) {
  SpmTokenizer tok(make_test_vocab({{"▁Once", -1}, {"▁upon", -1}}));
  StreamDecoder from_bos(tok);
  EXPECT_EQ(from_bos.push(1), "");
  EXPECT_EQ(from_bos.push(kFirstPiece), "Once");
  EXPECT_EQ(from_bos.push(kFirstPiece + 1), " upon");
  StreamDecoder flagged(tok, /*after_bos=*/true);
  EXPECT_EQ(flagged.push(kFirstPiece), "Once");
  StreamDecoder continuation(tok);
  EXPECT_EQ(continuation.push(kFirstPiece + 1), " upon");
}

TEST(StreamDecoder, RandomByteStreamsOnlyEverEmitWellFormedText) {
  SpmTokenizer tok(make_test_vocab({{"▁x", -1}}));
  const std::string sample = "héllo 你好 🙂 ∑ end";
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    // Valid text with random corruption: dropped, inserted or flipped bytes.
    std::string bytes = sample;
    for (int k = 0; k < 3; ++k) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes.erase(at, 1); break;
        case 1: bytes.insert(at, 1, static_cast<char>(0x80 + rng() % 0x80)); break;
        default: bytes[at] = static_cast<char>(rng() % 256); break;
      }
    }
    StreamDecoder dec(tok);
    std::string joined;
    for (char c : bytes) {
      const std::string out = dec.push(byte_tok(static_cast<uint8_t>(c)));
      ASSERT_TRUE(well_formed(out)) << "round " << round;
      joined += out;
    }
    const std::string tail = dec.flush();
    ASSERT_TRUE(well_formed(tail));
    joined += tail;
    // Streaming loses nothing: it equals sanitizing the whole text at once.
    EXPECT_EQ(joined, utf8_sanitize(bytes)) << "round " << round;
  }
}

}  // namespace
}  // namespace triattn
