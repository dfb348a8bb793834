// The building blocks of `triattn eval`: JSONL reading and its errors (file and line),
// configurations from --policies/--budgets through the policy registry, the probability
// helpers, the needle match rule and turn split, tables and the SVG writer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "common/error_of.h"
#include "common/shared_files.h"
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
  EXPECT_EQ(parse_policies("full, triattention"), (std::vector<PolicyChoice>{{"full", false}, {"triattention", false}}));
  const auto all = parse_policies("all");
  EXPECT_EQ(all.size(), kv_policy_list().size());
  const std::string e = error_of([] { parse_policies("full,nosuch"); });
  EXPECT_NE(e.find("unknown KV policy 'nosuch'"), std::string::npos);
  EXPECT_NE(e.find("triattention"), std::string::npos) << "lists the known ones";
  EXPECT_NE(error_of([] { check_budgets({64, 0}); }).find("at least 1"), std::string::npos);
  const std::vector<PolicyChoice> tri = {{"triattention", false}};
  const auto c = make_configs(tri, {256, 64, 64});
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].label(), "full");
  EXPECT_EQ(c[1].label(), "triattention@64");
  EXPECT_EQ(c[2].label(), "triattention@256");
  EXPECT_NE(error_of([&] { make_configs(tri, {}); }).find("--budgets"), std::string::npos);
  EXPECT_EQ(make_configs({{"full", false}}, {}).size(), 1u);
  // Every registered policy becomes configurations without eval knowing it.
  const auto every = make_configs(all, {64});
  size_t pruning = 0;
  for (const PolicyInfo& p : kv_policy_list()) pruning += p.prunes;
  EXPECT_EQ(every.size(), 1 + pruning + (kv_policy_list().size() - pruning - 1));
}

// NAME+recall: the same policy with the cold tier and recall, a configuration of its own
// next to NAME, labelled and plotted as NAME+recall; its factory's settings switch recall on.
TEST(EvalConfigs, RecallSuffix) {
  const auto p = parse_policies("triattention+recall, triattention, triattention+recall");
  EXPECT_EQ(p, (std::vector<PolicyChoice>{{"triattention", true}, {"triattention", false}}));
  EXPECT_EQ(p[0].label(), "triattention+recall");
  const auto all = parse_policies("all");
  EXPECT_TRUE(std::none_of(all.begin(), all.end(), [](const PolicyChoice& c) { return c.recall; }))
      << "all means the policies without recall";
  const auto c = make_configs(p, {64});
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[1].label(), "triattention+recall@64");
  EXPECT_EQ(c[1].policy_label(), "triattention+recall");
  EXPECT_EQ(c[1].policy, "triattention");
  EXPECT_EQ(c[2].label(), "triattention@64");
  const LinePlot plot = budget_plot("t", "y", c, {1.0, 0.5, 0.25});
  ASSERT_EQ(plot.series.size(), 2u);
  EXPECT_EQ(plot.series[0].name, "triattention+recall");
  EXPECT_EQ(plot.series[1].name, "triattention");

  const std::string full = error_of([] { parse_policies("full+recall"); });
  EXPECT_NE(full.find("'full+recall'"), std::string::npos) << full;
  EXPECT_NE(full.find("evicts nothing"), std::string::npos) << full;
  EXPECT_NE(error_of([] { make_configs({{"full", true}}, {64}); }).find("nothing to recall"), std::string::npos);
  const std::string foo = error_of([] { parse_policies("triattention+foo"); });
  EXPECT_NE(foo.find("unknown suffix '+foo'"), std::string::npos) << foo;
  EXPECT_NE(error_of([] { parse_policies("nosuch+recall"); }).find("unknown KV policy 'nosuch'"), std::string::npos);
}

TEST(EvalConfigs, RecallReachesTheFactorySettings) {
  const std::string path = test::shared_path("models/stories260k/stories260K.bin");
  const std::shared_ptr<const Model> model = Model::load(path);
  const auto configs = make_configs(parse_policies("snapkv+recall,snapkv"), {16});
  const ConfigFactories f(*model, KvSettings{}, configs);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_FALSE(f.at(0).settings().recall.on);
  EXPECT_TRUE(f.at(1).settings().recall.on);
  EXPECT_EQ(f.at(1).settings().policy, "snapkv");
  EXPECT_EQ(f.at(1).settings().params.budget, 16);
  EXPECT_FALSE(f.at(2).settings().recall.on);
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

TEST(EvalNeedle, TurnsSplitAtTheLastLine) {
  NeedleItem it;
  it.text = "doc line\npasskey ID-3 = 111111\nmore\npasskey ID-3 = ";
  it.line = 7;
  const auto [doc, question] = split_needle_turns(it);
  EXPECT_EQ(doc, "doc line\npasskey ID-3 = 111111\nmore\n");
  EXPECT_EQ(question, "passkey ID-3 = ");
  it.text = "no line break";
  EXPECT_NE(error_of([&] { split_needle_turns(it); }).find("line 7: --turns 2 splits the prompt at its last line, but it has no line break"),
            std::string::npos);
  it.text = "ends\n";
  EXPECT_NE(error_of([&] { split_needle_turns(it); }).find("no question"), std::string::npos);
  check_needle_turns({1, 0});
  check_needle_turns({2, 0});
  check_needle_turns({2, 8});
  EXPECT_NE(error_of([] { check_needle_turns({3, 0}); }).find("--turns 3: 1"), std::string::npos);
  EXPECT_NE(error_of([] { check_needle_turns({0, 0}); }).find("--turns 0"), std::string::npos);
  EXPECT_NE(error_of([] { check_needle_turns({1, 8}); }).find("--gen 8 needs --turns 2"), std::string::npos);
  EXPECT_NE(error_of([] { check_needle_turns({2, -1}); }).find("--gen must be >= 0"), std::string::npos);
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
