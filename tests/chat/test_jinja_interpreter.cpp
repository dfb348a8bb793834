// Unit tests of the Jinja interpreter pieces: whitespace control, expressions, filters,
// tests, methods, loops, scoping, macros and error reporting.
#include <gtest/gtest.h>

#include "chat/jinja_errors.h"
#include "chat/jinja_template.h"
#include "chat/jinja_value.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

using ojson = nlohmann::ordered_json;

std::string render(const std::string& src, const ojson& vars = ojson::object()) {
  Value v = value_from_json(vars);
  return Template(src).render(v.dict_ref());
}

// The message of the Error that rendering (or parsing) `src` throws; "" when none.
std::string error_of(const std::string& src, const ojson& vars = ojson::object()) {
  try {
    render(src, vars);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------- whitespace

TEST(JinjaWhitespace, TrimBlocksDropsNewlineAfterBlockTag) {
  EXPECT_EQ(render("{% if true %}\nyes\n{% endif %}\nend"), "yes\nend");
  // but not after an expression
  EXPECT_EQ(render("{{ 1 }}\nx"), "1\nx");
}

TEST(JinjaWhitespace, LstripBlocksRemovesIndentBeforeBlockTag) {
  EXPECT_EQ(render("a\n    {% if true %}\n    b\n    {% endif %}\nc"), "a\n    b\nc");
  // only when the tag starts the line
  EXPECT_EQ(render("a  {% if true %}b{% endif %}"), "a  b");
  // `{%+` opts out of lstrip, `+%}` out of trim
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
}

TEST(JinjaWhitespace, MinusStripsAllWhitespace) {
  EXPECT_EQ(render("a  \n\n  {{- 'b' -}}  \n\n c"), "abc");
  EXPECT_EQ(render("a \n {%- if true -%} \n b \n {%- endif -%} \n c"), "abc");
  EXPECT_EQ(render("x {#- comment -#} y"), "xy");
}

TEST(JinjaWhitespace, CommentsAndTrailingNewline) {
  EXPECT_EQ(render("{# a\nmultiline comment #}\nx"), "x");
  EXPECT_EQ(render("x\n"), "x");      // keep_trailing_newline is off
  EXPECT_EQ(render("x\n\n"), "x\n");  // only one is dropped
  EXPECT_EQ(render("a\r\nb"), "a\nb");
}

TEST(JinjaWhitespace, RawBlock) {
  EXPECT_EQ(render("{% raw %}{{ not parsed }}{% endraw %}"), "{{ not parsed }}");
}

// ---------------------------------------------------------------- expressions

TEST(JinjaExpr, LiteralsAndPrinting) {
  EXPECT_EQ(render("{{ 'a' \"b\" }}"), "ab");
  EXPECT_EQ(render("{{ none }}|{{ true }}|{{ False }}|{{ 1.0 }}|{{ 2.5e3 }}|{{ 1e20 }}"), "None|True|False|1.0|2500.0|1e+20");
  EXPECT_EQ(render("{{ [1, 'a', none] }}"), "[1, 'a', None]");
  EXPECT_EQ(render("{{ {'k': \"it's\"} }}"), "{'k': \"it's\"}");
  EXPECT_EQ(render("{{ undefined_thing }}"), "");
  EXPECT_EQ(render("{{ (1,) }} {{ (1, 2) }} {{ (1, 2) == [1, 2] }} {{ {'a': 1}.items() }}"),
            "(1,) (1, 2) False [('a', 1)]");
  EXPECT_EQ(render("{{ '\\u00e9\\n\\t' }}"), "\xc3\xa9\n\t");
}

TEST(JinjaExpr, Arithmetic) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}"),
            "7 3 -4 2 3.5 1024");
  EXPECT_EQ(render("{{ 'ab' * 3 }} {{ [1] + [2] }} {{ 1 ~ 'x' ~ none }}"), "ababab [1, 2] 1xNone");
  EXPECT_EQ(render("{{ -x }}", {{"x", 3}}), "-3");
  EXPECT_NE(error_of("{{ 'a' + 1 }}").find("unsupported operand"), std::string::npos);
}

TEST(JinjaExpr, ComparisonAndLogic) {
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ 3 > 2 > 5 }}"), "True True True False");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }}"),
            "True True True True");
  EXPECT_EQ(render("{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not 0 }} {{ [] or none }}"), "x y True None");
  EXPECT_EQ(render("{{ 'yes' if 1 > 0 else 'no' }}{{ 'never' if false }}"), "yes");
}

TEST(JinjaExpr, AttributeItemAndSlices) {
  ojson vars = {{"m", {{"role", "user"}, {"list", {1, 2, 3, 4}}}}, {"s", "h\xc3\xa9llo"}};
  EXPECT_EQ(render("{{ m.role }} {{ m['role'] }} {{ m.list[-1] }} {{ m.list.0 }}", vars), "user user 4 1");
  EXPECT_EQ(render("{{ m.list[1:3] }} {{ m.list[::-1] }} {{ m.list[:-1] }} {{ m.list[::2] }}", vars),
            "[2, 3] [4, 3, 2, 1] [1, 2, 3] [1, 3]");
  // strings index and slice by code point, like Python
  EXPECT_EQ(render("{{ s[1] }} {{ s[::-1] }} {{ s|length }}", vars), "\xc3\xa9 oll\xc3\xa9h 5");
  // missing keys are undefined; only using an undefined value's attributes fails
  EXPECT_EQ(render("{{ m.missing is defined }} {{ m.list[10] is defined }}", vars), "False False");
  EXPECT_NE(error_of("{{ m.missing.x }}", vars).find("has no attribute 'missing'"), std::string::npos);
}

// ---------------------------------------------------------------- tests

TEST(JinjaTests, TypeTests) {
  ojson vars = {{"d", {{"a", 1}}}, {"l", {1}}, {"s", "x"}, {"n", nullptr}, {"i", 3}, {"f", 1.5}, {"b", false}};
  EXPECT_EQ(render("{{ d is mapping }}{{ l is mapping }}{{ s is string }}{{ l is iterable }}{{ s is iterable }}"
                   "{{ i is iterable }}{{ l is sequence }}",
                   vars),
            "TrueFalseTrueTrueTrueFalseTrue");
  EXPECT_EQ(render("{{ n is none }}{{ u is defined }}{{ u is undefined }}{{ n is defined }}{{ i is number }}"
                   "{{ f is number }}{{ s is number }}{{ i is integer }}{{ f is float }}",
                   vars),
            "TrueFalseTrueTrueTrueTrueFalseTrueTrue");
  EXPECT_EQ(render("{{ b is false }}{{ b is true }}{{ 0 is false }}{{ i is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}"
                   "{{ i is not none }}",
                   vars),
            "TrueFalseFalseTrueTrueTrueTrue");
  EXPECT_EQ(render("{{ 'a' is eq('a') }}{{ 2 is gt 1 }}{{ 'a' is in 'abc' }}"), "TrueTrueTrue");
}

TEST(JinjaTests, NotBindsLooserThanIs) {
  EXPECT_EQ(render("{{ not x is defined }}"), "True");
}

// ---------------------------------------------------------------- filters

TEST(JinjaFilters, StringFilters) {
  EXPECT_EQ(render("[{{ '  a b \\n' | trim }}] {{ 'ab' | upper }} {{ 'AB' | lower }} {{ 'hello world' | title }} "
                   "{{ 'hELLO' | capitalize }} {{ 'a-b-c' | replace('-', '+') }} {{ 'aaa' | replace('a', 'b', 2) }}"),
            "[a b] AB ab Hello World Hello a+b+c bba");
  // filters bind tighter than +
  EXPECT_EQ(render("{{ 'x' + '  y  ' | trim + 'z' }}"), "xyz");
  EXPECT_EQ(render("{{ 5 | string + '!' }} {{ '42' | int + 1 }} {{ 'x' | int }} {{ '2.7' | int }} {{ 3 | float }}"),
            "5! 43 0 2 3.0");
}

TEST(JinjaFilters, SequenceFilters) {
  ojson vars = {{"l", {3, 1, 2}}, {"d", {{"b", 1}, {"a", 2}}}, {"e", ojson::array()}};
  EXPECT_EQ(render("{{ l|length }} {{ l|first }} {{ l|last }} {{ l|join(', ') }} {{ l|sort|list }} "
                   "{{ l|reverse|list }} {{ l|max }} {{ l|min }} {{ l|sum }}",
                   vars),
            "3 3 2 3, 1, 2 [1, 2, 3] [2, 1, 3] 3 1 6");
  EXPECT_EQ(render("{{ d|items|list }} {{ d|length }} {{ d|list }} {{ d|dictsort }}", vars),
            "[('b', 1), ('a', 2)] 2 ['b', 'a'] [('a', 2), ('b', 1)]");
  EXPECT_EQ(render("{{ e|first is defined }} {{ u|length }} {{ u|default('dflt') }} {{ '' | default('x', true) }} "
                   "{{ 0 | default('x') }}",
                   vars),
            "False 0 dflt x 0");
}

TEST(JinjaFilters, SelectRejectMap) {
  ojson vars = {{"msgs",
                 {{{"role", "user"}, {"content", "a"}},
                  {{"role", "assistant"}, {"content", "b"}},
                  {{"role", "user"}, {"content", "c"}}}},
                {"names", {"x", "code_interpreter", "y"}}};
  EXPECT_EQ(render("{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join }}", vars), "ac");
  EXPECT_EQ(render("{{ msgs | rejectattr('role', 'eq', 'user') | map(attribute='content') | list }}", vars), "['b']");
  EXPECT_EQ(render("{{ names | reject('equalto', 'code_interpreter') | join(', ') }}", vars), "x, y");
  EXPECT_EQ(render("{{ names | select('in', ['y']) | list }} {{ names | map('upper') | join }}", vars),
            "['y'] XCODE_INTERPRETERY");
  EXPECT_EQ(render("{{ [0, 1, '', 'a'] | select | list }}"), "[1, 'a']");
}

TEST(JinjaFilters, ToJsonMatchesPythonJsonDumps) {
  ojson vars = {{"v", ojson::parse(R"({"b": [1, 2.5, true, null], "a": "é\"\n", "e": {}, "f": []})")}};
  EXPECT_EQ(render("{{ v | tojson }}", vars), R"({"b": [1, 2.5, true, null], "a": "é\"\n", "e": {}, "f": []})");
  EXPECT_EQ(render("{{ v | tojson(indent=2) }}", vars),
            "{\n  \"b\": [\n    1,\n    2.5,\n    true,\n    null\n  ],\n  \"a\": \"é\\\"\\n\",\n  \"e\": {},\n  \"f\": []\n}");
  EXPECT_EQ(render("{{ v | tojson(sort_keys=true, ensure_ascii=true) }}", vars),
            R"({"a": "\u00e9\"\n", "b": [1, 2.5, true, null], "e": {}, "f": []})");
  EXPECT_EQ(render("{{ '<&>' | tojson }} {{ 1.0 | tojson }}"), "\"<&>\" 1.0");  // no HTML escaping
  EXPECT_NE(error_of("{{ undefined_x | tojson }}").find("not JSON serializable"), std::string::npos);
}

// ---------------------------------------------------------------- methods

TEST(JinjaMethods, StringMethods) {
  EXPECT_EQ(render("{{ '\\n\\nx\\n'.strip('\\n') }}|{{ '  x '.lstrip() }}|{{ 'x\\n\\n'.rstrip('\\n') }}"), "x|x |x");
  EXPECT_EQ(render("{{ 'a</think>b</think>c'.split('</think>') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }}"),
            "['a', 'b', 'c'] ['a', 'b'] ['a', 'b,c']");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'abc'.replace('b', 'X') }}"
                   "{{ 'ab'.upper() }}{{ 'AB'.lower() }}{{ 'a b'.title() }}"),
            "TrueTrueaXcABabA B");
  EXPECT_EQ(render("{{ '{} and {name}'.format(1, name='x') }} {{ '-'.join(['a', 'b']) }}"), "1 and x a-b");
}

TEST(JinjaMethods, DictMethods) {
  ojson vars = {{"d", {{"b", 1}, {"a", 2}}}};
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", vars), "b=1;a=2;");
  EXPECT_EQ(render("{{ d.keys() }} {{ d.values() }} {{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.get('z') }}", vars),
            "['b', 'a'] [1, 2] 2 dflt None");
  EXPECT_NE(error_of("{{ [1].append(2) }}").find("immutable"), std::string::npos);
}

// ---------------------------------------------------------------- statements

TEST(JinjaStatements, LoopVariables) {
  EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first|int }}{{ loop.last|int }}{{ loop.length }} {% endfor %}"),
            "1032103 2121003 3210013 ");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem | default('-') }}{{ loop.nextitem | default('-') }} "
                   "{% endfor %}"),
            "-2 13 2- ");
}

TEST(JinjaStatements, LoopElseFilterBreakContinue) {
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in range(6) if x % 2 == 0 %}{{ x }}{{ ',' if not loop.last }}{% endfor %}"), "0,2,4");
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{% if x == 1 %}{% continue %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "02");
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}"), "3 7 ");
  EXPECT_EQ(render("{% for i in range(2) %}{% for j in range(2) %}{{ loop.index }}{% endfor %}{{ loop.index }}|"
                   "{% endfor %}"),
            "121|122|");
}

TEST(JinjaStatements, IfElifElse) {
  const char* src = "{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(render(src, {{"x", 1}}), "one");
  EXPECT_EQ(render(src, {{"x", 2}}), "two");
  EXPECT_EQ(render(src, {{"x", 5}}), "many");
}

TEST(JinjaStatements, ScopingAndNamespace) {
  // `set` inside a loop does not leak out of it; a namespace carries state across iterations
  EXPECT_EQ(render("{% set x = 0 %}{% for i in range(3) %}{% set x = i %}{% endfor %}{{ x }}"), "0");
  EXPECT_EQ(render("{% set ns = namespace(x=0) %}{% for i in range(3) %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}"),
            "3");
  // `if` has no scope
  EXPECT_EQ(render("{% if true %}{% set y = 'set' %}{% endif %}{{ y }}"), "set");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set block %}  in {{ 'block' }}{% endset %}[{{ block }}]"), "[  in block]");
  EXPECT_NE(error_of("{% set d = {} %}{% set d.x = 1 %}").find("non-namespace"), std::string::npos);
}

TEST(JinjaStatements, Macros) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('A') }} {{ greet('B', punct='?') }}"),
            "Hi A! Hi B?");
}

TEST(JinjaStatements, GenerationBlockRendersBody) {
  EXPECT_EQ(render("{% generation %}gen{% endgeneration %}"), "gen");
}

// ---------------------------------------------------------------- errors

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  EXPECT_NE(error_of("line1\n{% if x %}\nno end").find("line 3"), std::string::npos);
  EXPECT_NE(error_of("line1\n{% if x %}\nno end").find("'endif'"), std::string::npos);
  EXPECT_NE(error_of("a\nb\n{{ x | no_such_filter }}").find("line 3: no filter named 'no_such_filter'"),
            std::string::npos);
  EXPECT_NE(error_of("{{ x is no_such_test }}").find("no test named"), std::string::npos);
  EXPECT_NE(error_of("\n{% include 'x' %}").find("line 2: unknown tag 'include'"), std::string::npos);
  EXPECT_NE(error_of("{{ 'unterminated }}").find("unterminated string"), std::string::npos);
  EXPECT_NE(error_of("{{ (1 + }}").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("{% break %}").find("outside of a for loop"), std::string::npos);
  EXPECT_NE(error_of("{# never closed").find("unclosed comment"), std::string::npos);
}

TEST(JinjaErrors, RuntimeErrorsNameTheLine) {
  std::string msg = error_of("ok\n\n{{ missing.attr }}");
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'missing' is undefined"), std::string::npos) << msg;
  EXPECT_NE(error_of("\n{{ 1 / 0 }}").find("line 2: division by zero"), std::string::npos);
  EXPECT_NE(error_of("{{ 1 < 'a' }}").find("not supported between"), std::string::npos);
}

TEST(JinjaErrors, RaisedMessagesPassThroughUnchanged) {
  ValueDict vars;
  vars.set("raise_exception", Value::callable("raise_exception", [](const CallArgs& a) -> Value {
             throw TemplateRaised(a.pos.at(0).to_str());
           }));
  Template t("a\n{% if true %}{{ raise_exception('Bad roles') }}{% endif %}");
  try {
    t.render(vars);
    FAIL() << "expected TemplateRaised";
  } catch (const TemplateRaised& e) {
    EXPECT_STREQ(e.what(), "Bad roles");
  }
}

TEST(JinjaErrors, DeepNestingIsRefusedNotACrash) {
  EXPECT_THROW(render("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), Error);
  std::string ifs;
  for (int i = 0; i < 3000; ++i) ifs += "{% if true %}";
  EXPECT_THROW(render(ifs), Error);
  EXPECT_THROW(render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"), Error);
}

}  // namespace
}  // namespace triattn::jinja
