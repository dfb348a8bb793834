// The limits on one render (chat/jinja_limits.h). A chat template is a program from a
// downloaded model file: every way it could run for minutes or take all memory must end
// quickly with an Error that names the limit, while real templates use a tiny part of the
// budget. Nothing here is timed: each test asserts the error and its message, and each
// stops well under a second because the limits are reached early.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "chat/jinja_errors.h"
#include "chat/jinja_limits.h"
#include "chat/jinja_template.h"
#include "chat/jinja_value.h"
#include "core/error.h"
#include "chat_test_util.h"

namespace triattn::jinja {
namespace {

using ojson = nlohmann::ordered_json;

// The message of the Error that rendering `src` throws; "" when it renders.
std::string render_error(const std::string& src) {
  try {
    Template(src).render({});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Whether rendering `src` throws an Error whose message contains `part`.
::testing::AssertionResult Fails(const std::string& src, const std::string& part) {
  std::string message = render_error(src);
  if (message.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "error \"" << message << "\" does not contain \"" << part << "\"";
}

const char* kStepsError = "more than 10000000 evaluation steps (the limit";
const char* kStringError = "bytes is over the limit of 16777216 bytes (16 MiB) for one value";
const char* kOutputError = "the output would be over the limit of 16777216 bytes (16 MiB)";
const char* kNestingError = "nested more than 512 levels deep";

TEST(JinjaLimits, ConstantsAreWhatTheMessagesSay) {
  EXPECT_EQ(kMaxSteps, 10'000'000);
  EXPECT_EQ(kMaxStringBytes, 16u << 20);
  EXPECT_EQ(kMaxOutputBytes, 16u << 20);
  EXPECT_EQ(kMaxListItems, 1u << 20);
  EXPECT_EQ(kMaxNesting, 512);
}

// ---------------------------------------------------------------- growing one value

// `set` inside a loop is local to its iteration (as in Jinja2), so this only looks like
// doubling; state that survives iterations lives in a namespace.
TEST(JinjaLimits, LoopLocalSetDoesNotAccumulate) {
  EXPECT_EQ(Template("{% set s = 'x' %}{% for i in range(60) %}{% set s = s ~ s %}{% endfor %}{{ s }}").render({}),
            "x");
}

TEST(JinjaLimits, DoublingAStringByTilde) {
  // 2^24 bytes is allowed, 2^25 is refused before it is built.
  EXPECT_TRUE(
      Fails("{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
            "{% endfor %}{{ ns.s }}",
            "chat template line 1: a string of 33554432 " + std::string(kStringError)));
}

TEST(JinjaLimits, DoublingByPlus) {
  EXPECT_TRUE(
      Fails("{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}"
            "{% endfor %}",
            "a string of 33554432 " + std::string(kStringError)));
  // A list costs a Value (~100 bytes) an item, so the step budget ends list doubling before
  // the item limit does.
  EXPECT_TRUE(
      Fails("{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = ns.l + ns.l %}"
            "{% endfor %}",
            kStepsError));
}

TEST(JinjaLimits, RepeatingAnEmptySequenceEndsAtOnce) {
  // Found by fuzz_jinja: the result's size is 0 for any count, so no size limit stopped the
  // 20**12 empty appends (tests/data/fuzz_regressions/fuzz_jinja/timeout-empty-string-repeat).
  EXPECT_EQ(Template("{{ ''[::-1] * 20**12 }}|{{ ([] * 9223372036854775807) | length }}").render({}), "|0");
  EXPECT_EQ(Template("{{ 10**15 * '' }}{{ ('' * 10**15) | length }}").render({}), "0");
}

TEST(JinjaLimits, RepetitionByStar) {
  EXPECT_TRUE(Fails("{{ 'x' * 100000000 }}", "a string of 100000000 " + std::string(kStringError)));
  EXPECT_TRUE(Fails("{{ 'ab' * 9223372036854775807 }}", kStringError));  // no overflow
  EXPECT_TRUE(
      Fails("{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s * 2 %}"
            "{% endfor %}",
            kStringError));
  EXPECT_TRUE(Fails("{{ ([1] * 10000000) | length }}",
                    "a list of 10000000 items is over the limit of 1048576 items for one value"));
  EXPECT_TRUE(
      Fails("{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = ns.l * 2 %}"
            "{% endfor %}",
            kStepsError));
}

TEST(JinjaLimits, StringFilters) {
  // 100 references to one shared 1 MB string are cheap; joining them is not.
  EXPECT_TRUE(Fails("{% set l = ['x' * 1000000] * 100 %}{{ l | join }}", kStringError));
  EXPECT_TRUE(Fails("{% set l = ['x' * 1000000] * 100 %}{{ ''.join(l) }}", kStringError));
  EXPECT_TRUE(
      Fails("{% set ns = namespace(s='x') %}{% for i in range(60) %}"
            "{% set ns.s = [ns.s, ns.s] | join %}{% endfor %}",
            kStringError));
  // replace checks the size of its result before building it.
  EXPECT_TRUE(Fails("{{ ('x' * 1000000) | replace('x', 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyy') }}",
                    "a string of 30000000 " + std::string(kStringError)));
  EXPECT_TRUE(Fails("{{ ('x' * 1000000).replace('', 'yyyyyyyyyyyyyyyyyyyy') }}", kStringError));
  EXPECT_TRUE(Fails("{{ 'a\nb' | indent(100000000) }}", kStringError));
  EXPECT_TRUE(Fails("{% set s = 'x' * 10000000 %}{{ '%s%s' | format(s, s) }}", kStringError));
  EXPECT_TRUE(Fails("{% set s = 'x' * 10000000 %}{{ '{}{}'.format(s, s) }}", kStringError));
}

TEST(JinjaLimits, FiltersThatMakeManyItems) {
  EXPECT_TRUE(Fails("{{ ('<' * 4500000) | escape }}", kStringError));
  EXPECT_TRUE(Fails("{{ (',' * 5000000).split(',') | length }}", "str.split(): more than 1048576 parts"));
  EXPECT_TRUE(
      Fails("{{ ('x' * 2000000) | list | length }}", "a list of 2000000 items is over the limit of 1048576 items"));
}

TEST(JinjaLimits, ToJsonOfAHugeStructure) {
  // 10^5 references to one small dict, 2 * 10^7 bytes of JSON.
  EXPECT_TRUE(Fails("{% set l = [{'key': 'x' * 200}] * 100000 %}{{ l | tojson }}", kStringError));
  EXPECT_TRUE(Fails("{{ [1] | tojson(indent=100000000) }}", kStringError));
  EXPECT_TRUE(
      Fails("{% set ns = namespace(l=[]) %}{% for i in range(5) %}{% set ns.l = [ns.l] * 100 %}"
            "{% endfor %}{{ ns.l | tojson }}",
            kStringError));
}

// Each level holds the one below twice: 2^100 leaves in 200 small lists.
const char* kShared =
    "{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(100) %}"
    "{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}";

TEST(JinjaLimits, SharedValuesThatCompareHuge) {
  EXPECT_EQ(render_error(kShared), "");
  EXPECT_TRUE(Fails(kShared + std::string("{{ ns.a == ns.b }}"), kStepsError));
  EXPECT_TRUE(Fails(kShared + std::string("{{ [ns.a, ns.b] | unique | list }}"), kStepsError));
}

TEST(JinjaLimits, SharedValuesThatPrintHuge) {
  EXPECT_TRUE(Fails(kShared + std::string("{{ ns.a }}"), kStringError));
  EXPECT_TRUE(Fails(kShared + std::string("{{ ns.a | tojson }}"), kStringError));
}

TEST(JinjaLimits, QuadraticFilters) {
  EXPECT_TRUE(Fails("{{ range(100000) | unique | list | length }}", kStepsError));
  EXPECT_TRUE(Fails("{{ range(100000) | map('string') | sum(start='') | length }}", kStepsError));
  EXPECT_TRUE(Fails("{% set l = range(100000) | list %}{{ l | select('in', l) | list | length }}", kStepsError));
}

// ---------------------------------------------------------------- long-running loops

TEST(JinjaLimits, NestedLoops) {
  EXPECT_TRUE(
      Fails("{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}"
            "{% endfor %}{% endfor %}{% endfor %}",
            "chat template line 1: " + std::string(kStepsError)));
  EXPECT_TRUE(
      Fails("{% for i in range(1000000) %}{% for j in range(1000000) %}"
            "{% for k in range(1000000) %}{% endfor %}{% endfor %}{% endfor %}",
            kStepsError));
}

TEST(JinjaLimits, LoopAppendingToAList) {
  EXPECT_TRUE(
      Fails("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}"
            "{% endfor %}{{ ns.l | length }}",
            kStepsError));
}

TEST(JinjaLimits, NamespaceUpdatesInLoops) {
  EXPECT_TRUE(
      Fails("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
            "{% endfor %}",
            kStringError));
  EXPECT_TRUE(
      Fails("{% set ns = namespace(n=0) %}{% for i in range(1000) %}{% for j in range(1000) %}"
            "{% set ns.n = ns.n + 1 %}{% endfor %}{% endfor %}{{ ns.n }}",
            kStepsError));
}

TEST(JinjaLimits, HugeRangeIsRefusedBeforeItIsBuilt) {
  EXPECT_TRUE(
      Fails("{{ range(10000000) | length }}", "range(): 10000000 items is over the limit of 1048576 for one list"));
  EXPECT_TRUE(
      Fails("{{ range(-9223372036854775807, 9223372036854775807) | length }}", "range(): 18446744073709551614 items"));
  EXPECT_EQ(Template("{{ range(0, 10, 3) | list }} {{ range(5, 0, -2) | list }}").render({}), "[0, 3, 6, 9] [5, 3, 1]");
}

// ---------------------------------------------------------------- macros

TEST(JinjaLimits, MacroRecursionDepth) {
  EXPECT_TRUE(Fails("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macro 'f' recursed more than 64 levels"));
}

TEST(JinjaLimits, MacrosCallingMacrosFanOut) {
  // Shallow (depth 40) but 2^40 calls.
  EXPECT_TRUE(
      Fails("{% macro a(n) %}{% if n > 0 %}{{ a(n - 1) }}{{ a(n - 1) }}{% endif %}{% endmacro %}"
            "{{ a(40) }}",
            kStepsError));
  // Distinct macros, each calling the one before ten times: 10^6 calls.
  std::string src = "{% macro m0() %}x{% endmacro %}";
  for (int i = 1; i <= 6; ++i)
    src += "{% macro m" + std::to_string(i) + "() %}{% for k in range(10) %}{{ m" + std::to_string(i - 1) +
           "() }}{% endfor %}{% endmacro %}";
  src += "{{ m6() }}";
  EXPECT_TRUE(Fails(src, kStepsError));
}

// ---------------------------------------------------------------- output and nesting

TEST(JinjaLimits, HugeOutputViaLoop) {
  EXPECT_TRUE(Fails("{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s }}{% endfor %}",
                    "chat template line 1: " + std::string(kOutputError)));
  // Text between tags counts too.
  EXPECT_TRUE(Fails("{% for i in range(1000) %}" + std::string(100000, 'y') + "{% endfor %}", kOutputError));
  // A macro's or `set` block's output becomes a string value: the string limit.
  EXPECT_TRUE(
      Fails("{% set s = 'x' * 1000000 %}{% macro m() %}{% for i in range(100) %}{{ s }}{% endfor %}"
            "{% endmacro %}{{ m() }}",
            kStringError));
  EXPECT_TRUE(
      Fails("{% set s = 'x' * 1000000 %}{% set b %}{% for i in range(100) %}{{ s }}{% endfor %}"
            "{% endset %}",
            kStringError));
}

TEST(JinjaLimits, DeeplyNestedValuesAreRefused) {
  EXPECT_TRUE(
      Fails("{% set ns = namespace(l=[]) %}{% for i in range(10000) %}{% set ns.l = [ns.l] %}"
            "{% endfor %}",
            "values " + std::string(kNestingError)));
  // A namespace that holds itself prints as a cycle: refused, not a stack overflow.
  EXPECT_TRUE(Fails("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", kNestingError));
  // Variables from a request are checked as they are converted.
  ojson deep = 1;
  for (int i = 0; i < 1000; ++i) deep = ojson::array({deep});
  EXPECT_THROW(value_from_json(deep), Error);
  EXPECT_EQ(value_from_json(ojson::parse("[[[[1]]]]")).depth(), 4);
}

TEST(JinjaLimits, IntegerArithmeticNeverTrapsOrHangs) {
  EXPECT_TRUE(Fails("{{ 9223372036854775807 + 1 }}", "integer overflow"));
  EXPECT_TRUE(Fails("{{ -(-9223372036854775807 - 1) }}", "integer overflow"));
  EXPECT_TRUE(Fails("{{ (-9223372036854775807 - 1) // -1 }}", "integer overflow"));
  EXPECT_TRUE(Fails("{{ 3037000500 * 3037000500 }}", "integer overflow"));
  EXPECT_TRUE(Fails("{{ 2 ** 64 }}", "integer power overflows"));
  EXPECT_EQ(Template("{{ (-9223372036854775807 - 1) % -1 }} {{ 1 ** 9223372036854775807 }} "
                     "{{ (-1) ** 9223372036854775807 }} {{ 0 ** 0 }} {{ 7 // -1 }}")
                .render({}),
            "0 1 -1 1 -7");
  EXPECT_EQ(Template("{{ (-9223372036854775807 - 1) is divisibleby(-1) }}").render({}), "True");
}

// ---------------------------------------------------------------- real templates

using test::slurp;
using test::template_files;

// The variables transformers passes, for a 10-message conversation.
ValueDict chat_vars(const ojson& messages, const ojson& tools) {
  ValueDict vars;
  vars.set("messages", value_from_json(messages));
  vars.set("tools", tools.is_null() ? Value::none() : value_from_json(tools));
  vars.set("add_generation_prompt", Value::boolean(true));
  vars.set("bos_token", Value("<s>"));
  vars.set("eos_token", Value("</s>"));
  vars.set("date_string", Value("01 Feb 2025"));
  vars.set("raise_exception", Value::callable("raise_exception", [](const CallArgs& a) -> Value {
             throw TemplateRaised(a.pos.empty() ? std::string() : a.pos[0].to_str());
           }));
  vars.set("strftime_now", Value::callable("strftime_now", [](const CallArgs&) { return Value("01 Feb 2025"); }));
  return vars;
}

// system, then user/assistant turns with one tool call and its result: 10 messages.
ojson conversation_with_tools() {
  ojson call = {{"id", "call00001"},
                {"type", "function"},
                {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}};
  return ojson::array({{{"role", "system"}, {"content", "You are a helpful assistant."}},
                       {{"role", "user"}, {"content", "Hello!"}},
                       {{"role", "assistant"}, {"content", "Hi there! How can I help?"}},
                       {{"role", "user"}, {"content", "What is the weather in Paris?"}},
                       {{"role", "assistant"}, {"content", ""}, {"tool_calls", ojson::array({call})}},
                       {{"role", "tool"}, {"content", "{\"temp\": 18}"}, {"tool_call_id", "call00001"}},
                       {{"role", "assistant"}, {"content", "It is 18 degrees in Paris."}},
                       {{"role", "user"}, {"content", "And tomorrow?"}},
                       {{"role", "assistant"}, {"content", "<think>\nNo forecast.\n</think>\n\nI cannot tell."}},
                       {{"role", "user"}, {"content", "Thanks, bye!"}}});
}

// For templates without a system role or tools: user/assistant turns, 10 messages.
ojson plain_conversation() {
  ojson m = ojson::array();
  for (int i = 0; i < 5; ++i) {
    m.push_back({{"role", "user"}, {"content", "Question number " + std::to_string(i) + "?"}});
    m.push_back({{"role", "assistant"}, {"content", "Answer number " + std::to_string(i) + "."}});
  }
  return m;
}

ojson tools() {
  return ojson::parse(R"([{"type": "function", "function": {"name": "get_weather", "description": "Get weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string",
      "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}])");
}

// Every real template renders a 10-message conversation (with tools where it takes them)
// in a few thousand steps: the limit is thousands of times what they need.
TEST(JinjaLimits, RealTemplatesUseATinyPartOfTheBudget) {
  auto files = template_files();
  ASSERT_GE(files.size(), 12u);
  for (const auto& path : files) {
    Template t(slurp(path));
    int64_t steps = 0;
    std::string how = "with tools";
    try {
      t.render(chat_vars(conversation_with_tools(), tools()), &steps);
    } catch (const TemplateRaised&) {
      how = "plain";  // the template refuses a system role, tools or tool messages
      t.render(chat_vars(plain_conversation(), nullptr), &steps);
    }
    std::printf("  %-60s %6lld steps (%s)\n", path.filename().c_str(), static_cast<long long>(steps), how.c_str());
    EXPECT_GT(steps, 0) << path;
    EXPECT_LT(steps, kMaxSteps / 1000) << path;
  }
}

// A 1 MB conversation (1000 messages of 1 KB, a quarter of a million tokens, beyond most
// context windows) still uses a small part of the budget with every template.
TEST(JinjaLimits, LongConversationsFitWithRoomToSpare) {
  ojson m = ojson::array();
  for (int i = 0; i < 1000; ++i)
    m.push_back(
        {{"role", i % 2 ? "assistant" : "user"}, {"content", std::string(1000, static_cast<char>('a' + i % 26))}});
  for (const auto& path : template_files()) {
    int64_t steps = 0;
    std::string out = Template(slurp(path)).render(chat_vars(m, nullptr), &steps);
    std::printf("  %-60s %8lld steps, %zu bytes out\n", path.filename().c_str(), static_cast<long long>(steps),
                out.size());
    EXPECT_GT(out.size(), 1'000'000u) << path;
    EXPECT_LT(steps, kMaxSteps / 5) << path;
  }
}

}  // namespace
}  // namespace triattn::jinja
