// The building blocks of `triattn eval`: JSONL reading and its errors (file and line),
// configurations from --policies/--budgets through the policy registry, the probability
// helpers, the needle match rule, tables and the SVG writer.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "core/error.h"
#include "eval/agree_eval.h"
#include "eval/distributions.h"
#include "eval/eval_config.h"
#include "eval/jsonl.h"
#include "eval/needle_eval.h"
#include "eval/report.h"
#include "eval/svg_plot.h"

namespace triattn::eval {
namespace {

using test::error_of;

TEST(EvalJsonl, ErrorsNameFileAndLine) {
  test::TempDir d;
  const std::string bad = d.write("bad.jsonl", "{\"text\": \"a\", \"answer\": \"1\"}\n\n{\"text\": oops}\n");
  EXPECT_NE(error_of([&] { read_jsonl(bad); }).find(bad + ":3: not valid JSON"), std::string::npos)
      << error_of([&] { read_jsonl(bad); });
  const std::string arr = d.write("arr.jsonl", "[1, 2]\n");
  EXPECT_NE(error_of([&] { read_jsonl(arr); }).find(arr + ":1: expected a JSON object"), std::string::npos);
  const std::string empty = d.write("empty.jsonl", "\n \n");
  EXPECT_NE(error_of([&] { read_jsonl(empty); }).find("no records"), std::string::npos);
  EXPECT_NE(error_of([&] { read_jsonl(d.file("missing.jsonl")); }).find("missing.jsonl"), std::string::npos);
  const std::string no_answer = d.write("na.jsonl", "{\"text\": \"a\", \"answer\": \"1\"}\n{\"text\": \"b\"}\n");
  EXPECT_NE(error_of([&] { read_needles(no_answer); }).find(no_answer + ":2: field 'answer' is missing"),
            std::string::npos);
  const std::string typed = d.write("t.jsonl", "{\"text\": [1], \"answer\": \"1\"}\n");
  EXPECT_NE(error_of([&] { read_needles(typed); }).find(typed + ":1: field 'text' must be a string"), std::string::npos);
}

TEST(EvalJsonl, NumbersAsStringsAndDepth) {
  test::TempDir d;
  const auto items = read_needles(d.write("n.jsonl", "{\"text\": \"key 123456 then more text here\", \"answer\": 123456}\n"
                                                     "{\"text\": \"nothing\", \"answer\": \"9\"}\n"));
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].answer, "123456");
  EXPECT_NEAR(items[0].depth, 4.0 / 30, 1e-9);
  EXPECT_EQ(items[1].depth, -1);
  EXPECT_EQ(items[1].line, 2);
}

TEST(EvalPrompts, LinesOrJsonl) {
  test::TempDir d;
  EXPECT_EQ(read_prompts(d.write("p.txt", "one\n\n two \r\n")), (std::vector<std::string>{"one", " two "}));
  EXPECT_EQ(read_prompts(d.write("p.jsonl", "{\"prompt\": \"a\"}\n{\"text\": \"b\"}\n")),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_NE(error_of([&] { read_prompts(d.write("e.txt", "\n\n")); }).find("no prompts"), std::string::npos);
}

TEST(EvalConfigs, FromRegistry) {
  EXPECT_EQ(parse_policies("full, triattention"), (std::vector<std::string>{"full", "triattention"}));
  const auto all = parse_policies("all");
  EXPECT_EQ(all.size(), kv_policy_list().size());
  const std::string e = error_of([] { parse_policies("full,nosuch"); });
  EXPECT_NE(e.find("unknown KV policy 'nosuch'"), std::string::npos);
  EXPECT_NE(e.find("triattention"), std::string::npos) << "lists the known ones";
  EXPECT_NE(error_of([] { check_budgets({64, 0}); }).find("at least 1"), std::string::npos);
  const auto c = make_configs({"triattention"}, {256, 64, 64});
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].label(), "full");
  EXPECT_EQ(c[1].label(), "triattention@64");
  EXPECT_EQ(c[2].label(), "triattention@256");
  EXPECT_NE(error_of([] { make_configs({"triattention"}, {}); }).find("--budgets"), std::string::npos);
  EXPECT_EQ(make_configs({"full"}, {}).size(), 1u);
  // Every registered policy becomes configurations without eval knowing it.
  const auto every = make_configs(all, {64});
  size_t pruning = 0;
  for (const PolicyInfo& p : kv_policy_list()) pruning += p.prunes;
  EXPECT_EQ(every.size(), 1 + pruning + (kv_policy_list().size() - pruning - 1));
}

TEST(EvalDistributions, NllKl) {
  const std::vector<float> l = {0, std::log(3.0f)};
  EXPECT_NEAR(nll_of(l, 1), -std::log(0.75), 1e-6);
  EXPECT_NEAR(nll_of(l, 0), -std::log(0.25), 1e-6);
  EXPECT_NEAR(kl_divergence(l, l), 0, 1e-12);
  const std::vector<float> u = {0, 0};
  EXPECT_NEAR(kl_divergence(l, u), 0.75 * std::log(1.5) + 0.25 * std::log(0.5), 1e-6);
  EXPECT_THROW(nll_of(l, 2), Error);
}

TEST(EvalNeedle, MatchRule) {
  EXPECT_TRUE(needle_correct("123456", "123456"));
  EXPECT_TRUE(needle_correct(" 123456\nmore", "123456"));
  EXPECT_FALSE(needle_correct("12345", "123456"));
  EXPECT_FALSE(needle_correct("x123456", "123456"));
  EXPECT_FALSE(needle_correct("", "1"));
}

TEST(EvalReport, TablesAndSvg) {
  Table t{{"policy", "budget", "ppl"}, {{"full", "-", 3.14159265}, {"a,b", 64, nullptr}}};
  EXPECT_EQ(markdown_table(t), "| policy | budget | ppl |\n|---|---:|---:|\n| full | - | 3.142 |\n| a,b | 64 |  |\n");
  EXPECT_EQ(csv_table(t), "policy,budget,ppl\nfull,-,3.14159265\n\"a,b\",64,\n");
  const LinePlot p = budget_plot("t<1>", "ppl", {{"full", 0}, {"x", 64}, {"x", 128}, {"y", 64}}, {2.0, 3.0, 2.5, NAN});
  ASSERT_EQ(p.series.size(), 2u);
  EXPECT_EQ(p.references.size(), 1u);
  const std::string svg = render_svg(p);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("t&lt;1&gt;"), std::string::npos) << "text is escaped";
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos) << "full is a dashed reference line";
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(render_svg(LinePlot{}).find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace triattn::eval
