// Chat templates: the Jinja lexer, parser and interpreter (filters, tests, methods, macros,
// loops, namespace(), tojson, raise_exception) with the template AND the variables fuzzed.
// Input: template | messages (JSON; a fixed conversation when it is not a JSON array) |
// extra variables (a JSON object: tools, enable_thinking, ...). Rendering is bounded by
// chat/jinja_limits.h, so every input must end (libFuzzer's -timeout catches one that doesn't).
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "fuzz_util.h"

using namespace triattn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split(data, size, 3);
  using oj = nlohmann::ordered_json;
  oj messages = oj::parse(parts[1], nullptr, false);
  if (!messages.is_array()) {
    messages = oj::array({oj{{"role", "system"}, {"content", "Be brief."}},
                          oj{{"role", "user"}, {"content", "Hello"}},
                          oj{{"role", "assistant"}, {"content", "<think>x</think>Hi!"}},
                          oj{{"role", "user"}, {"content", "Again"}}});
  }
  ChatRenderOptions opt;
  opt.bos_token = "<s>";
  opt.eos_token = "</s>";
  opt.now_unix = 0;
  oj extra = oj::parse(parts[2], nullptr, false);
  if (extra.is_object()) opt.extra = extra;
  fuzz::expect_named_errors([&] {
    ChatTemplate tpl{std::string(parts[0])};
    // One render per input (the step budget makes the worst one cost ~1.5 s under ASan):
    // add_generation_prompt from the template's length.
    opt.add_generation_prompt = parts[0].size() % 2 == 0;
    try {
      (void)tpl.render(messages, opt);
    } catch (const ChatTemplateRaised&) {
    }
  });
  return 0;
}
