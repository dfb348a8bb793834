// Loading byte-level BPE vocabularies from every supported file kind: what each loader
// extracts (specials, BOS policy, end-of-generation ids, templates), the HF tokenizer.json
// path checked against the Qwen2 vectors, and malformed files raising Error.
#include <gtest/gtest.h>

#include "common/temp_dir.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/test_bpe_util.h"
#include "tokenizer/bpe_tokenizer.h"

namespace triattn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::bpe_shared;

bool contains(const std::vector<int32_t>& v, int32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

using test::TempDir;

TEST(BpeLoadVocabMerges, Qwen2SpecialsAndMetadata) {
  auto tok = make_bpe_tokenizer_vocab_merges(bpe_shared("tokenizers/qwen2"), "qwen2");
  EXPECT_EQ(tok->vocab_size(), 151665);
  EXPECT_EQ(tok->bos_id(), -1);  // Qwen has no BOS
  EXPECT_FALSE(tok->add_bos_default());
  EXPECT_EQ(tok->eos_id(), 151645);  // <|im_end|> per tokenizer_config.json
  EXPECT_TRUE(contains(tok->eog_ids(), 151643));  // <|endoftext|>
  EXPECT_TRUE(contains(tok->eog_ids(), 151645));
  EXPECT_NE(tok->chat_template().find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(tok->token_text(151644), "<|im_start|>");

  const auto ids = tok->encode("<|im_start|>user\nhi<|im_end|>", false, true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(ids.back(), 151645);
  // Without parse_special the marker is ordinary text...
  const auto plain = tok->encode("<|im_start|>", false, false);
  EXPECT_FALSE(contains(plain, 151644));
  EXPECT_EQ(tok->decode(plain), "<|im_start|>");
  // ...but non-special added tokens (<tool_call>) are always recognised.
  EXPECT_EQ(tok->encode("<tool_call>", false, false), std::vector<int32_t>{151657});
  EXPECT_EQ(tok->decode(ids), "user\nhi");
  EXPECT_EQ(tok->decode(ids, true), "<|im_start|>user\nhi<|im_end|>");
}

TEST(BpeLoadVocabMerges, DefaultPreNameIsResolvedFromTokenizerClass) {
  // load.cpp passes "default" for vocab.json directories; Qwen2Tokenizer implies qwen2.
  auto tok = make_bpe_tokenizer_vocab_merges(bpe_shared("tokenizers/qwen2"), "default");
  const auto v = test::read_bpe_vectors(bpe_shared("tokenizers/ggml-vocab-qwen2.gguf"));
  ASSERT_FALSE(v.empty());
  for (const auto& c : v) EXPECT_EQ(tok->encode(c.input, false), c.expected) << c.input;
}

TEST(BpeLoadTiktoken, Llama3SpecialsAndBos) {
  auto tok = make_bpe_tokenizer_tiktoken(bpe_shared("tokenizers/llama3/tokenizer.model"));
  EXPECT_EQ(tok->vocab_size(), 128256);
  EXPECT_EQ(tok->bos_id(), 128000);
  EXPECT_TRUE(tok->add_bos_default());
  EXPECT_EQ(tok->eos_id(), 128001);
  EXPECT_TRUE(contains(tok->eog_ids(), 128009));  // <|eot_id|>
  EXPECT_EQ(tok->token_text(128006), "<|start_header_id|>");
  EXPECT_EQ(tok->token_text(128255), "<|reserved_special_token_250|>");
  EXPECT_FALSE(tok->chat_template().empty());  // from tokenizer_config.json next to the file
  const auto ids = tok->encode("<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", true, true);
  ASSERT_GE(ids.size(), 5u);
  EXPECT_EQ(ids[0], 128000);
  EXPECT_EQ(ids[1], 128006);
  EXPECT_EQ(ids.back(), 128009);
  // " Việt" is one token only under the whole-piece rule (merging by rank cannot reach it).
  EXPECT_EQ(tok->encode(" Việt", false), std::vector<int32_t>{101798});
}

TEST(BpeLoadTiktoken, BuiltInSpecialListWithoutConfig) {
  TempDir d;
  // Copy only tokenizer.model: no tokenizer_config.json beside it.
  const auto p = (d / "tokenizer.model").string();
  fs::copy_file(bpe_shared("tokenizers/llama3/tokenizer.model"), p);
  auto tok = make_bpe_tokenizer_tiktoken(p);
  EXPECT_EQ(tok->vocab_size(), 128256);
  EXPECT_EQ(tok->token_text(128009), "<|eot_id|>");
  EXPECT_EQ(tok->token_text(128008), "<|reserved_special_token_4|>");
  EXPECT_EQ(tok->token_text(128010), "<|reserved_special_token_5|>");
  EXPECT_TRUE(contains(tok->eog_ids(), 128009));
  EXPECT_TRUE(tok->chat_template().empty());
}

TEST(BpeLoadGguf, DeepseekCoderAddedTokensAndBos) {
  auto g = GgufFile::open(bpe_shared("tokenizers/ggml-vocab-deepseek-coder.gguf"));
  auto tok = make_bpe_tokenizer_gguf(*g);
  EXPECT_EQ(tok->bos_id(), 32013);
  EXPECT_TRUE(tok->add_bos_default());
  EXPECT_EQ(tok->eos_id(), 32014);
  EXPECT_TRUE(contains(tok->eog_ids(), 32021));  // <|EOT|>
  // 'ü' is a user-defined token (type 4): cut out of the text and decoded as raw text.
  EXPECT_EQ(tok->encode("Führer", false), (std::vector<int32_t>{37, 32009, 71, 6247}));
  EXPECT_EQ(tok->decode(std::vector<int32_t>{32009}), "ü");
  const auto withbos = tok->encode("Hi", true);
  EXPECT_EQ(withbos.front(), 32013);
}

TEST(BpeLoadGguf, ArbitraryBytesRoundTrip) {
  auto g = GgufFile::open(bpe_shared("tokenizers/ggml-vocab-gpt-2.gguf"));
  auto tok = make_bpe_tokenizer_gguf(*g);
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::string s(1 + rng() % 300, '\0');
    for (auto& c : s) c = char(rng() & 0xFF);  // mostly invalid UTF-8
    EXPECT_EQ(tok->decode(tok->encode(s, false)), s);
  }
  // Long single pieces stay fast and exact.
  const std::string letters(50000, 'a'), spaces(50000, ' ');
  EXPECT_EQ(tok->decode(tok->encode(letters, false)), letters);
  EXPECT_EQ(tok->decode(tok->encode(spaces + "x", false)), spaces + "x");
}

// A tokenizer.json equivalent to the Qwen2 vocab.json + merges.txt files.
std::string qwen2_tokenizer_json(bool merges_as_pairs) {
  json j;
  j["version"] = "1.0";
  j["normalizer"] = {{"type", "NFC"}};
  json split = {{"type", "Split"},
                {"pattern",
                 {{"Regex",
                   R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
                {"behavior", "Isolated"},
                {"invert", false}};
  json bl = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({split, bl})}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  j["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  json model;
  model["type"] = "BPE";
  model["vocab"] = json::parse(test::bpe_slurp(bpe_shared("tokenizers/qwen2/vocab.json")));
  json merges = json::array();
  std::istringstream in(test::bpe_slurp(bpe_shared("tokenizers/qwen2/merges.txt")));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.starts_with("#version")) continue;
    const auto sp = line.find(' ');
    if (merges_as_pairs) {
      merges.push_back(json::array({line.substr(0, sp), line.substr(sp + 1)}));
    } else {
      merges.push_back(line);
    }
  }
  model["merges"] = std::move(merges);
  model["ignore_merges"] = false;
  j["model"] = std::move(model);
  j["added_tokens"] = json::array({
      {{"id", 151643}, {"content", "<|endoftext|>"}, {"special", true}},
      {{"id", 151644}, {"content", "<|im_start|>"}, {"special", true}},
      {{"id", 151645}, {"content", "<|im_end|>"}, {"special", true}},
  });
  return j.dump();
}

TEST(BpeLoadHf, TokenizerJsonMatchesQwen2VectorsWithBothMergeFormats) {
  const auto vectors = test::read_bpe_vectors(bpe_shared("tokenizers/ggml-vocab-qwen2.gguf"));
  ASSERT_FALSE(vectors.empty());
  for (bool pairs : {false, true}) {
    // No directory: nothing but the JSON itself is used.
    auto tok = make_bpe_tokenizer_hf(qwen2_tokenizer_json(pairs), "");
    size_t pass = 0;
    for (const auto& v : vectors) {
      const auto ids = tok->encode(v.input, false);
      pass += ids == v.expected;
      EXPECT_EQ(ids, v.expected) << (pairs ? "[a,b] merges: " : "\"a b\" merges: ") << v.input;
      EXPECT_EQ(tok->decode(ids), v.input);
    }
    std::printf("[ vectors  ] qwen2 tokenizer.json (%s merges) %zu/%zu\n", pairs ? "[a,b]" : "\"a b\"", pass,
                vectors.size());
    EXPECT_EQ(tok->encode("<|im_end|>", false, true), std::vector<int32_t>{151645});
    EXPECT_TRUE(contains(tok->eog_ids(), 151645));
  }
}

// A small tokenizer.json: GPT-2 ByteLevel regex, BOS through TemplateProcessing.
json tiny_tokenizer_json() {
  json j;
  j["model"] = {{"type", "BPE"},
                {"vocab", {{"h", 0}, {"i", 1}, {"\xC4\xA0", 2}, {"hi", 3}, {"\xC4\xA0hi", 4}, {"<bos>", 5}}},
                {"merges", json::array({"h i", "\xC4\xA0 hi"})}};
  j["added_tokens"] = json::array({{{"id", 5}, {"content", "<bos>"}, {"special", true}}});
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  j["decoder"] = {{"type", "ByteLevel"}};
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}};
  return j;
}

TEST(BpeLoadHf, TemplateProcessingGivesBos) {
  auto tok = make_bpe_tokenizer_hf(tiny_tokenizer_json().dump(), "");
  EXPECT_EQ(tok->bos_id(), 5);
  EXPECT_TRUE(tok->add_bos_default());
  EXPECT_EQ(tok->encode("hi hi", true), (std::vector<int32_t>{5, 3, 4}));
}

TEST(BpeLoadHf, MalformedTokenizerJsonRaisesError) {
  const std::string good = tiny_tokenizer_json().dump();
  EXPECT_NO_THROW(make_bpe_tokenizer_hf(good, ""));
  EXPECT_THROW(make_bpe_tokenizer_hf(good.substr(0, good.size() / 2), ""), Error);  // truncated
  EXPECT_THROW(make_bpe_tokenizer_hf("", ""), Error);
  EXPECT_THROW(make_bpe_tokenizer_hf("[1,2,3]", ""), Error);
  auto j = tiny_tokenizer_json();
  j["model"]["merges"] = json::array({"h i", "hi"});  // no separator
  EXPECT_THROW(make_bpe_tokenizer_hf(j.dump(), ""), Error);
  j = tiny_tokenizer_json();
  j["model"]["merges"] = json::array({"h x"});  // unknown token
  EXPECT_THROW(make_bpe_tokenizer_hf(j.dump(), ""), Error);
  j = tiny_tokenizer_json();
  j["model"]["merges"] = json::array({json::array({"h"})});  // pair with one element
  EXPECT_THROW(make_bpe_tokenizer_hf(j.dump(), ""), Error);
  j = tiny_tokenizer_json();
  j["model"]["vocab"]["x"] = "seven";  // non-integer id
  EXPECT_THROW(make_bpe_tokenizer_hf(j.dump(), ""), Error);
  j = tiny_tokenizer_json();
  j["model"]["vocab"]["x"] = 1;  // duplicate id
  EXPECT_THROW(make_bpe_tokenizer_hf(j.dump(), ""), Error);
  j = tiny_tokenizer_json();
  j["model"]["type"] = "WordPiece";
  EXPECT_THROW(make_bpe_tokenizer_hf(j.dump(), ""), Error);
  j = tiny_tokenizer_json();
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  j["decoder"] = {{"type", "Metaspace"}};
  EXPECT_THROW(make_bpe_tokenizer_hf(j.dump(), ""), Error);  // not byte-level
  j = tiny_tokenizer_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(bad"}}}, {"behavior", "Isolated"}};
  EXPECT_THROW(make_bpe_tokenizer_hf(j.dump(), ""), Error);
  j = tiny_tokenizer_json();
  j.erase("model");
  EXPECT_THROW(make_bpe_tokenizer_hf(j.dump(), ""), Error);
}

TEST(BpeLoadVocabMerges, MalformedFilesRaiseError) {
  TempDir d;
  const std::string dir = d.path().string();
  d.write("vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  d.write("merges.txt", "#version: 0.2\na b\n");
  EXPECT_EQ(make_bpe_tokenizer_vocab_merges(dir, "gpt-2")->encode("ab", false), std::vector<int32_t>{2});
  EXPECT_THROW(make_bpe_tokenizer_vocab_merges(dir, "no-such-pre"), Error);
  d.write("merges.txt", "a b\nab\n");  // bad line
  EXPECT_THROW(make_bpe_tokenizer_vocab_merges(dir, "gpt-2"), Error);
  d.write("merges.txt", "a b\na c\n");  // unknown token
  EXPECT_THROW(make_bpe_tokenizer_vocab_merges(dir, "gpt-2"), Error);
  d.write("merges.txt", "a b\n");
  d.write("vocab.json", R"({"a": 0, "b": 1, "ab")");  // truncated
  EXPECT_THROW(make_bpe_tokenizer_vocab_merges(dir, "gpt-2"), Error);
  d.write("vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  d.write("tokenizer_config.json", R"({"eos_token": "<missing>"})");  // names no token
  EXPECT_THROW(make_bpe_tokenizer_vocab_merges(dir, "gpt-2"), Error);
  d.write("tokenizer_config.json", R"({"added_tokens_decoder": {"x": {"content": "<s>"}}})");
  EXPECT_THROW(make_bpe_tokenizer_vocab_merges(dir, "gpt-2"), Error);
  EXPECT_THROW(make_bpe_tokenizer_vocab_merges((d / "nowhere").string(), "gpt-2"), Error);
}

TEST(BpeLoadTiktoken, MalformedFilesRaiseError) {
  TempDir d;
  // "YQ==" = "a", "Yg==" = "b", "YWI=" = "ab"
  EXPECT_EQ(make_bpe_tokenizer_tiktoken(d.write("ok.model", "YQ== 0\nYg== 1\nYWI= 2\n"))->encode("ab", false),
            std::vector<int32_t>{2});
  EXPECT_THROW(make_bpe_tokenizer_tiktoken(d.write("b64.model", "YQ== 0\nY!== 1\n")), Error);
  EXPECT_THROW(make_bpe_tokenizer_tiktoken(d.write("pad.model", "YQ== 0\nY=g= 1\n")), Error);
  EXPECT_THROW(make_bpe_tokenizer_tiktoken(d.write("len.model", "YQ= 0\n")), Error);
  EXPECT_THROW(make_bpe_tokenizer_tiktoken(d.write("norank.model", "YQ==\n")), Error);
  EXPECT_THROW(make_bpe_tokenizer_tiktoken(d.write("badrank.model", "YQ== zero\n")), Error);
  EXPECT_THROW(make_bpe_tokenizer_tiktoken(d.write("order.model", "YQ== 0\nYg== 5\n")), Error);
  EXPECT_THROW(make_bpe_tokenizer_tiktoken(d.write("empty.model", "")), Error);
  EXPECT_THROW(make_bpe_tokenizer_tiktoken((d / "missing.model").string()), Error);
}

TEST(BpeLoadGguf, MalformedMetadataRaisesError) {
  TempDir d;
  auto write = [&](const std::string& name, const std::vector<std::string>& merges, const std::string& pre) {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", pre);
    w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
    w.set_string_array("tokenizer.ggml.merges", merges);
    const auto p = (d / name).string();
    w.write(p);
    return GgufFile::open(p);
  };
  EXPECT_EQ(make_bpe_tokenizer_gguf(*write("ok.gguf", {"a b"}, "gpt-2"))->encode("ab", false),
            std::vector<int32_t>{2});
  EXPECT_THROW(make_bpe_tokenizer_gguf(*write("nosep.gguf", {"ab"}, "gpt-2")), Error);
  EXPECT_THROW(make_bpe_tokenizer_gguf(*write("unknown.gguf", {"a c"}, "gpt-2")), Error);
  EXPECT_THROW(make_bpe_tokenizer_gguf(*write("pre.gguf", {"a b"}, "martian")), Error);
}

}  // namespace
}  // namespace triattn
