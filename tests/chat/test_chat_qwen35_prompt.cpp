// A Qwen3.5-style HF model directory end to end: tokenizer.json + tokenizer_config.json
// without a template + chat_template.jinja (how the released checkpoints ship it). The
// prompt must come from chat_template.jinja, and the markers the template writes
// (<|im_start|>, <|im_end|>, <think>, </think>, <tool_call>) must tokenize as single tokens.
// The vocabulary is synthetic (bytes only; the real one is not in ../shared yet), the
// template is the released one.
#include <gtest/gtest.h>

#include "common/temp_dir.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "tokenizer/bpe_byte_map.h"
#include "tokenizer/tokenizer.h"

namespace triattn {
// Named, so the unity build's other test files (same helper names) do not collide.
namespace qwen35_prompt {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// Ids after the 256 byte tokens, in Qwen3.5's order (there 248044...).
constexpr int32_t kEndOfText = 256, kImStart = 257, kImEnd = 258, kToolCall = 259, kToolCallEnd = 260,
                  kThink = 261, kThinkEnd = 262;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json added(int32_t id, const char* text, bool special) {
  return {{"id", id}, {"content", text}, {"special", special}, {"lstrip", false}, {"rstrip", false},
          {"normalized", false}, {"single_word", false}};
}

// Writes the three files the released checkpoints ship for the tokenizer and template.
void write_model_dir(const test::TempDir& d) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[bpe_bytes_to_text(std::string(1, char(b)))] = b;
  json split = {{"type", "Split"},
                {"pattern",
                 {{"Regex",
                   R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
                {"behavior", "Isolated"},
                {"invert", false}};
  json bl = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  json tj = {{"version", "1.0"},
             {"normalizer", {{"type", "NFC"}}},
             {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", json::array({split, bl})}}},
             {"decoder", bl},
             {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}},
             {"added_tokens", json::array({added(kEndOfText, "<|endoftext|>", true), added(kImStart, "<|im_start|>", true),
                                           added(kImEnd, "<|im_end|>", true), added(kToolCall, "<tool_call>", false),
                                           added(kToolCallEnd, "</tool_call>", false), added(kThink, "<think>", false),
                                           added(kThinkEnd, "</think>", false)})}};
  d.write("tokenizer.json", tj.dump());
  d.write("tokenizer_config.json",
          R"({"add_prefix_space": false, "bos_token": null, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
              "model_max_length": 262144, "tokenizer_class": "Qwen2Tokenizer"})");
  d.write("chat_template.jinja",
          slurp(std::string(TRIATTN_SOURCE_DIR) + "/tests/data/chat-templates/Qwen-Qwen3.5-4B.jinja"));
}

std::vector<int32_t> bytes(const std::string& s) {
  std::vector<int32_t> ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(ChatQwen35Directory, TemplateFromChatTemplateJinjaAndMarkersAreSingleTokens) {
  test::TempDir d;
  write_model_dir(d);
  auto tok = load_tokenizer_hf_dir(d.path().string());
  ChatPrompt prompt(*tok, d.path().string(), {}, nullptr);
  EXPECT_FALSE(prompt.is_fallback());
  EXPECT_EQ(prompt.origin(), (d.path() / "chat_template.jinja").string());

  const ojson m = ojson::array({chat_message("user", "Hi")});
  const std::string text = prompt.render(m, true);
  ASSERT_EQ(text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(prompt.tokenize(text), cat({{kImStart}, bytes("user\nHi"), {kImEnd}, bytes("\n"), {kImStart},
                                        bytes("assistant\n"), {kThink}, bytes("\n")}));

  // enable_thinking=false closes an empty think block: both tags single tokens.
  const std::string no_think = prompt.render(m, true, {{"enable_thinking", false}});
  EXPECT_EQ(prompt.tokenize_continuation(no_think.substr(text.size() - 8)),
            cat({{kThink}, bytes("\n\n"), {kThinkEnd}, bytes("\n\n")}));

  // What the model writes to call a tool tokenizes back the same way.
  EXPECT_EQ(tok->encode("<tool_call>\n<function=f>\n</function>\n</tool_call><|im_end|>", false, true),
            cat({{kToolCall}, bytes("\n<function=f>\n</function>\n"), {kToolCallEnd}, {kImEnd}}));

  // Turn ends: <|im_end|> (EOS from tokenizer_config.json) and <|endoftext|>.
  EXPECT_EQ(tok->eos_id(), kImEnd);
  EXPECT_TRUE(tok->is_eog(kImEnd));
  EXPECT_TRUE(tok->is_eog(kEndOfText));
  EXPECT_FALSE(tok->is_eog(kThinkEnd));
  EXPECT_FALSE(tok->is_eog(kToolCallEnd));
  EXPECT_FALSE(tok->add_bos_default());
}

}  // namespace
}  // namespace qwen35_prompt
}  // namespace triattn
