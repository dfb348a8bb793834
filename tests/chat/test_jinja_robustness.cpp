// Malformed templates must fail cleanly: every prefix of every real chat template either
// parses (and then renders or throws Error) or throws Error; nothing crashes or hangs.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat_test_util.h"
#include "common/sanitizer_size.h"
#include "core/error.h"

namespace triattn {
namespace {

using test::slurp;
using test::template_files;

constexpr size_t kCutStride = test::sanitizer_size<size_t>(1, 3);

TEST(JinjaRobustness, EveryTruncationParsesOrThrowsError) {
  auto files = template_files();
  ASSERT_GE(files.size(), 12u);
  nlohmann::json messages = nlohmann::json::parse(
      R"([{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
          {"role": "assistant", "content": "a"}, {"role": "user", "content": "v"}])");
  for (const auto& path : files) {
    std::string src = slurp(path);
    size_t parsed = 0, rejected = 0;
    // Every cut (every third one in a sanitized build, and always the whole template).
    for (size_t len = 0; len <= src.size(); len = len == src.size() ? len + 1 : std::min(len + kCutStride, src.size())) {
      std::string cut = src.substr(0, len);
      try {
        ChatTemplate t(cut);
        ++parsed;
        try {
          t.render(messages, {});
        } catch (const Error&) {
          // a truncated template may fail at render time too; only a clean Error is allowed
        }
      } catch (const Error&) {
        ++rejected;
      }
    }
    // The full template parses, and cutting inside a tag must be rejected somewhere.
    EXPECT_GT(parsed, 0u) << path;
    EXPECT_GT(rejected, 0u) << path;
    EXPECT_NO_THROW(ChatTemplate{src}) << path;
  }
}

TEST(JinjaRobustness, GarbageInputThrowsError) {
  for (const char* src : {"{{", "{%", "{#", "{{ }}", "{% %}", "{% endif %}", "{% for %}", "{% for x in %}",
                          "{% set %}", "{{ a[ }}", "{{ a. }}", "{{ 'x' | }}", "{{ ) }}", "{% if x %}{% else %}{% else %}",
                          "{{ a if }}", "{% macro %}", "{{ 1 2 }}", "{{ \"\\u12 \" }}", "{% raw %}x"}) {
    EXPECT_THROW(ChatTemplate{src}, Error) << src;
  }
}

}  // namespace
}  // namespace triattn
