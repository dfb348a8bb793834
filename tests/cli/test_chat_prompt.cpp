// ChatPrompt (template choice, rendering, BOS rule) and escape_bytes, in process: they need
// a vocabulary, not a model.
#include <gtest/gtest.h>

#include <sstream>

#include "chat/chat_prompt.h"
#include "cli/cli_run.h"
#include "cli/escape_bytes.h"
#include "core/error.h"

namespace triattn::test {
namespace {

using nlohmann::ordered_json;


ordered_json one_user(const std::string& text) { return ordered_json::array({chat_message("user", text)}); }

// The tinystories HF directory with a tokenizer_config.json carrying `chat_template`.
void stories_dir_with_template(const ScratchDir& dir, const std::string& tpl) {
  copy_dir_files(kStoriesDir, dir.path());
  nlohmann::json cfg = nlohmann::json::parse(slurp(dir / "tokenizer_config.json"));
  cfg["chat_template"] = tpl;
  write_file(dir / "tokenizer_config.json", cfg.dump(2));
}

TEST(ChatPrompt, FallsBackToChatMlWithANotice) {
  auto tok = load_tokenizer_any(kStoriesGguf);
  std::ostringstream notices;
  ChatPrompt p(*tok, kStoriesGguf, {}, &notices);
  EXPECT_TRUE(p.is_fallback());
  EXPECT_NE(notices.str().find("ChatML"), std::string::npos) << notices.str();
  EXPECT_EQ(p.render(one_user("hi"), true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(p.render(one_user("hi"), false), "<|im_start|>user\nhi<|im_end|>\n");
}

TEST(ChatPrompt, AddsTheModelsBosOnce) {
  auto tok = load_tokenizer_any(kStoriesGguf);
  ChatPrompt plain(*tok, kStoriesGguf, {}, nullptr);
  const auto ids = plain.tokenize(plain.render(one_user("hi"), true));
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], 1);  // the model asks for BOS and ChatML does not write it
  EXPECT_NE(ids[1], 1);

  ScratchDir dir;
  write_file(dir / "t.jinja", "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}");
  ChatPromptOptions opt;
  opt.template_path = (dir / "t.jinja").string();
  ChatPrompt with_bos(*tok, kStoriesGguf, opt, nullptr);
  const std::string text = with_bos.render(one_user("Once upon a time,"), true);
  EXPECT_EQ(text, "<|start_story|>Once upon a time,");
  // The template's BOS text is the BOS token; no second one is prepended.
  EXPECT_EQ(with_bos.tokenize(text), (std::vector<int32_t>{1, 80, 147, 201, 282, 57, 8}));
  // A continuation never gets BOS, even from a model that asks for it.
  EXPECT_EQ(with_bos.tokenize_continuation("Once upon a time,"), (std::vector<int32_t>{80, 147, 201, 282, 57, 8}));
}

TEST(ChatPrompt, UsesTokenizerConfigTemplateOfHfDirectory) {
  ScratchDir dir;
  stories_dir_with_template(dir, "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}"
                                 "{% if add_generation_prompt %}[assistant]{% endif %}");
  auto tok = load_tokenizer_any(dir.path().string());
  std::ostringstream notices;
  ChatPrompt p(*tok, dir.path().string(), {}, &notices);
  EXPECT_FALSE(p.is_fallback());
  EXPECT_EQ(notices.str(), "");
  EXPECT_NE(p.origin().find("tokenizer_config.json"), std::string::npos) << p.origin();
  ordered_json msgs = ordered_json::array({chat_message("system", "S"), chat_message("user", "U")});
  EXPECT_EQ(p.render(msgs, true), "[system]S[user]U[assistant]");
}

TEST(ChatPrompt, UsesChatTemplateJinjaFileInModelDirectory) {
  ScratchDir dir;
  copy_dir_files(kStoriesDir, dir.path());
  write_file(dir / "chat_template.jinja", "J:{{ messages[0]['content'] }}");
  auto tok = load_tokenizer_any(dir.path().string());
  ChatPrompt p(*tok, dir.path().string(), {}, nullptr);
  EXPECT_FALSE(p.is_fallback());
  EXPECT_EQ(p.render(one_user("x"), true), "J:x");
}

TEST(ChatPrompt, TemplateOverrideFromTokenizerConfigJson) {
  ScratchDir dir;
  write_file(dir / "cfg.json", R"({"chat_template": "C:{{ messages[0]['content'] }}:{{ eos_token }}"})");
  auto tok = load_tokenizer_any(kStoriesGguf);
  ChatPromptOptions opt;
  opt.template_path = (dir / "cfg.json").string();
  ChatPrompt p(*tok, kStoriesGguf, opt, nullptr);
  EXPECT_EQ(p.render(one_user("x"), true), "C:x:<|end_story|>");
}

TEST(ChatPrompt, NoThinkWithRealQwen3Template) {
  auto tok = load_tokenizer_any(shared_path("tokenizers/qwen2"));
  ChatPromptOptions opt;
  opt.template_path = shared_path("chat-templates/Qwen-Qwen3-0.6B.jinja");
  const ChatPrompt thinking(*tok, shared_path("tokenizers/qwen2"), opt, nullptr);
  opt.no_think = true;
  const ChatPrompt no_think(*tok, shared_path("tokenizers/qwen2"), opt, nullptr);
  const std::string base = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(thinking.render(one_user("hi"), true), base);
  const std::string text = no_think.render(one_user("hi"), true);
  EXPECT_EQ(text, base + "<think>\n\n</think>\n\n");
  const auto ids = no_think.tokenize(text);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 151644);  // <|im_start|> as one token, and no BOS for Qwen
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 151645), 1);  // one <|im_end|>
}

TEST(ChatPrompt, BrokenTemplateNamesItsOrigin) {
  ScratchDir dir;
  write_file(dir / "bad.jinja", "{% frobnicate %}");
  auto tok = load_tokenizer_any(kStoriesGguf);
  ChatPromptOptions opt;
  opt.template_path = (dir / "bad.jinja").string();
  try {
    ChatPrompt p(*tok, kStoriesGguf, opt, nullptr);
    FAIL() << "a template with an unknown tag parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jinja"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not parse"), std::string::npos) << e.what();
  }
}

TEST(ChatPrompt, RaiseExceptionBecomesAnError) {
  ScratchDir dir;
  write_file(dir / "strict.jinja",
             "{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}ok");
  auto tok = load_tokenizer_any(kStoriesGguf);
  ChatPromptOptions opt;
  opt.template_path = (dir / "strict.jinja").string();
  ChatPrompt p(*tok, kStoriesGguf, opt, nullptr);
  EXPECT_EQ(p.render(one_user("x"), true), "ok");
  try {
    p.render(ordered_json::array({chat_message("system", "s")}), true);
    FAIL() << "raise_exception did not raise";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no system role"), std::string::npos) << e.what();
  }
}

TEST(EscapeBytes, KeepsCharactersEscapesTheRest) {
  EXPECT_EQ(cli::escape_bytes("plain text"), "plain text");
  EXPECT_EQ(cli::escape_bytes("caf\xC3\xA9 \xE2\x96\x81"), "caf\xC3\xA9 \xE2\x96\x81");  // é and ▁ pass
  EXPECT_EQ(cli::escape_bytes("a\nb\r\t"), "a\\nb\\r\\t");
  EXPECT_EQ(cli::escape_bytes(std::string("\0\x1b\x7f", 3)), "\\x00\\x1B\\x7F");
  EXPECT_EQ(cli::escape_bytes("\\'"), "\\\\\\'");
  EXPECT_EQ(cli::escape_bytes("\xE2\x96"), "\\xE2\\x96");  // half a character (a byte token)
  EXPECT_EQ(cli::escape_bytes("\xFF" "a"), "\\xFFa");
}

}  // namespace
}  // namespace triattn::test
