// The Qwen3.5 / Qwen3.6 pre-tokenizer (GGUF tokenizer.ggml.pre "qwen35"; tokenizer.json
// Split regex). It is Qwen2's pattern with [\p{L}\p{M}]+ for letter runs and \p{M} excluded
// from punctuation runs. No Qwen3.5 vocabulary is in ../shared yet, so these tests check the
// splits the two regexes give by definition (each expected list worked out by hand from the
// alternation order), and the loaders end to end on a tiny byte-level vocabulary whose one
// merge crosses a boundary that only Qwen2 cuts.
#include <gtest/gtest.h>

#include "common/temp_dir.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "tokenizer/bpe_byte_map.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pretokenize.h"

namespace triattn {
// Named, so the unity build's other test files (same helper names) do not collide.
namespace qwen35_pretokenize {
namespace {

using nlohmann::json;
using Pieces = std::vector<std::string>;

// The regex of transformers' Qwen3_5Tokenizer / the released tokenizer.json, (?i:...) form.
const char* kQwen35TokenizerJsonRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Pieces split_with(const std::string& family, const std::string& text) {
  const auto fam = pretokenizer_family(family);
  if (!fam) throw std::runtime_error("no family " + family);
  Pretokenizer p(fam->regexes, family);
  std::vector<std::string_view> out;
  p.split(text, out);
  return Pieces(out.begin(), out.end());
}

TEST(PretokenizeQwen35, FamilyIsKnownAndNotQwen2) {
  const auto fam = pretokenizer_family("qwen35");
  ASSERT_TRUE(fam.has_value());
  EXPECT_EQ(fam->name, "qwen35");
  ASSERT_EQ(fam->regexes.size(), 1u);
  EXPECT_NE(fam->regexes[0].find(R"([\p{L}\p{M}]+)"), std::string::npos);
  EXPECT_NE(fam->regexes[0].find(R"([^\s\p{L}\p{M}\p{N}]+)"), std::string::npos);
  EXPECT_FALSE(fam->ignore_merges);
  EXPECT_FALSE(fam->add_bos_default);  // Qwen prompts start without BOS, as with qwen2
  EXPECT_NE(fam->regexes, pretokenizer_family("qwen2")->regexes);
  EXPECT_NE(pretokenizer_family_names().find("qwen35"), std::string::npos);
}

struct SplitCase {
  const char* text;
  Pieces qwen2, qwen35;
};

// Where the two regexes disagree: a combining mark (\p{M}) is a letter-run character for
// Qwen3.5 and punctuation-ish (matched by [^\s\p{L}\p{N}]) for Qwen2.
const SplitCase kDiffering[] = {
    // e + U+0301 COMBINING ACUTE (decomposed é): Qwen2 cuts the accent off.
    {"e\xCC\x81", {"e", "\xCC\x81"}, {"e\xCC\x81"}},
    {"cafe\xCC\x81 ok", {"cafe", "\xCC\x81", " ok"}, {"cafe\xCC\x81", " ok"}},
    // नमस्ते: virama U+094D and vowel sign U+0947 are marks. Qwen2: "नमस", then the virama
    // is the optional lead of the next letter run ("्त"), then "े" alone.
    {"\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
     {"\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8", "\xE0\xA5\x8D\xE0\xA4\xA4", "\xE0\xA5\x87"},
     {"\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87"}},
    // ที่ (Thai): two marks above the consonant.
    {"\xE0\xB8\x97\xE0\xB8\xB5\xE0\xB9\x88", {"\xE0\xB8\x97", "\xE0\xB8\xB5\xE0\xB9\x88"},
     {"\xE0\xB8\x97\xE0\xB8\xB5\xE0\xB9\x88"}},
    // A space then a mark then a letter: Qwen3.5 takes " " as the lead of one letter run;
    // Qwen2 makes " ́" a punctuation run.
    {" \xCC\x81" "a", {" \xCC\x81", "a"}, {" \xCC\x81" "a"}},
    // Marks leave punctuation runs in Qwen3.5: ".." then the mark as a letter run of its own.
    {"..\xCC\x81", {"..\xCC\x81"}, {"..", "\xCC\x81"}},
};

TEST(PretokenizeQwen35, CombiningMarksSplitDifferentlyFromQwen2) {
  for (const auto& c : kDiffering) {
    EXPECT_EQ(split_with("qwen2", c.text), c.qwen2) << "qwen2 on '" << c.text << "'";
    EXPECT_EQ(split_with("qwen35", c.text), c.qwen35) << "qwen35 on '" << c.text << "'";
  }
}

// Without marks the two agree: single digits, contractions either case, newline runs,
// whitespace before a word kept with it, precomposed accents inside the letter run.
TEST(PretokenizeQwen35, SameAsQwen2WithoutMarks) {
  const std::pair<const char*, Pieces> cases[] = {
      {"Hello world 123", {"Hello", " world", " ", "1", "2", "3"}},
      {"I'M here, you'll see", {"I", "'M", " here", ",", " you", "'ll", " see"}},
      {"a\n\n b", {"a", "\n\n", " b"}},
      {"caf\xC3\xA9!!\n", {"caf\xC3\xA9", "!!\n"}},
      {"x  = 1", {"x", " ", " =", " ", "1"}},
      {"\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C", {"\xE4\xBD\xA0\xE5\xA5\xBD", "\xEF\xBC\x8C"}},  // 你好，
  };
  for (const auto& [text, want] : cases) {
    EXPECT_EQ(split_with("qwen35", text), want) << text;
    EXPECT_EQ(split_with("qwen2", text), want) << text;
  }
}

// The tokenizer.json spelling ((?i:...) contractions) and llama.cpp's spelled-out classes
// split the same way.
TEST(PretokenizeQwen35, TokenizerJsonRegexMatchesFamily) {
  Pretokenizer json_form({kQwen35TokenizerJsonRegex}, "tokenizer.json");
  const char* texts[] = {"I'M here", "We'Ve a'lL 3.3", "e\xCC\x81 ..\xCC\x81\n\n  x", "\xE0\xA4\xA8\xE0\xA5\x8D"};
  for (const char* t : texts) {
    std::vector<std::string_view> out;
    json_form.split(t, out);
    EXPECT_EQ(Pieces(out.begin(), out.end()), split_with("qwen35", t)) << t;
  }
}

// A byte-level vocabulary: ids 0..255 are the bytes, then one merge. The merge joins the
// last byte of स (0xB8) and the first byte of ् (0xE0), which sit in one Qwen3.5 piece but
// in two Qwen2 pieces; a second merge joins e + U+0301 the same way.
constexpr int32_t kSaVirama = 256, kAcute = 257, kEAcute = 258, kImEnd = 259;
const std::string kNamaste = "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87";

std::vector<std::string> tiny_tokens() {
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b) t.push_back(bpe_bytes_to_text(std::string(1, char(b))));
  t.push_back(bpe_bytes_to_text("\xB8\xE0"));
  t.push_back(bpe_bytes_to_text("\xCC\x81"));
  t.push_back(bpe_bytes_to_text("e\xCC\x81"));
  t.push_back("<|im_end|>");
  return t;
}

std::vector<std::string> tiny_merges() {
  return {bpe_bytes_to_text("\xB8") + " " + bpe_bytes_to_text("\xE0"),
          bpe_bytes_to_text("\xCC") + " " + bpe_bytes_to_text("\x81"),
          "e " + bpe_bytes_to_text("\xCC\x81")};
}

std::vector<int32_t> bytes_of(const std::string& s) {
  std::vector<int32_t> ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

std::vector<int32_t> namaste_qwen35_ids() {
  std::vector<int32_t> ids = bytes_of("\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4");
  ids.push_back(kSaVirama);
  for (int32_t b : bytes_of("\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87")) ids.push_back(b);
  return ids;
}

std::unique_ptr<Tokenizer> tiny_gguf(const test::TempDir& d, const std::string& pre) {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  w.set_string_array("tokenizer.ggml.tokens", tiny_tokens());
  w.set_string_array("tokenizer.ggml.merges", tiny_merges());
  const std::string p = d.file(pre + ".gguf");
  w.write(p);
  return make_bpe_tokenizer_gguf(*GgufFile::open(p));
}

TEST(PretokenizeQwen35, GgufPreNameSelectsTheQwen35Split) {
  test::TempDir d;
  auto q35 = tiny_gguf(d, "qwen35");
  auto q2 = tiny_gguf(d, "qwen2");
  EXPECT_EQ(q35->encode(kNamaste, false), namaste_qwen35_ids());
  EXPECT_EQ(q2->encode(kNamaste, false), bytes_of(kNamaste));
  // GGUF (like llama.cpp) applies no normalization: decomposed é stays two code points.
  EXPECT_EQ(q35->encode("e\xCC\x81", false), std::vector<int32_t>{kEAcute});
  EXPECT_EQ(q2->encode("e\xCC\x81", false), (std::vector<int32_t>{'e', kAcute}));
  EXPECT_EQ(q35->decode(q35->encode(kNamaste, false)), kNamaste);
}

// tokenizer.json as the Qwen3.5 checkpoints ship it: NFC, Split(regex, Isolated), then
// ByteLevel without its own regex.
std::string qwen35_tiny_tokenizer_json() {
  json j;
  j["version"] = "1.0";
  j["normalizer"] = {{"type", "NFC"}};
  json split = {{"type", "Split"},
                {"pattern", {{"Regex", kQwen35TokenizerJsonRegex}}},
                {"behavior", "Isolated"},
                {"invert", false}};
  json bl = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({split, bl})}};
  j["decoder"] = bl;
  json vocab = json::object();
  const auto toks = tiny_tokens();
  for (size_t i = 0; i + 1 < toks.size(); ++i) vocab[toks[i]] = i;
  json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", tiny_merges()}, {"ignore_merges", false}};
  j["model"] = model;
  j["added_tokens"] = json::array({{{"id", kImEnd}, {"content", "<|im_end|>"}, {"special", true}}});
  return j.dump();
}

TEST(PretokenizeQwen35, TokenizerJsonSplitRegexIsUsed) {
  auto tok = make_bpe_tokenizer_hf(qwen35_tiny_tokenizer_json(), "");
  // Devanagari is NFC-stable, so the missing renormalization does not matter here.
  EXPECT_EQ(tok->encode(kNamaste, false), namaste_qwen35_ids());
  std::vector<int32_t> with_end = namaste_qwen35_ids();
  with_end.push_back(kImEnd);
  EXPECT_EQ(tok->encode(kNamaste + "<|im_end|>", false, true), with_end);
  EXPECT_TRUE(tok->is_eog(kImEnd));  // <|im_end|> ends a turn
}

// vocab.json + merges.txt directories name no pre-tokenizer; transformers' Qwen3_5Tokenizer
// class implies this one.
TEST(PretokenizeQwen35, VocabMergesDirectoryFromTokenizerClass) {
  test::TempDir d;
  json vocab = json::object();
  const auto toks = tiny_tokens();
  for (size_t i = 0; i + 1 < toks.size(); ++i) vocab[toks[i]] = i;
  d.write("vocab.json", vocab.dump());
  std::string merges = "#version: 0.2\n";
  for (const auto& m : tiny_merges()) merges += m + "\n";
  d.write("merges.txt", merges);
  d.write("tokenizer_config.json", R"({"tokenizer_class": "Qwen3_5Tokenizer"})");
  auto tok = make_bpe_tokenizer_vocab_merges(d.path().string(), "default");
  EXPECT_EQ(tok->encode(kNamaste, false), namaste_qwen35_ids());
}

}  // namespace
}  // namespace qwen35_pretokenize
}  // namespace triattn
