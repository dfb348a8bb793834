// The SVG writer escapes what it is given and writes a well-formed document; the
// axis helpers pick round ticks and map values into the pixel box.
#include <gtest/gtest.h>

#include <string>

#include "analyze/figures.h"
#include "analyze/plot_frame.h"
#include "analyze/svg.h"

namespace triattn {
namespace {

TEST(Svg, EscapesTextAndAttributes) {
  EXPECT_EQ(xml_escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  Svg svg(100, 50, "title <1>");
  svg.text(1, 2, "x < y & z");
  svg.rect(0, 0, 10, 10, Svg::Style::filled("red").titled("tip \"q\""));
  const std::string s = svg.str();
  EXPECT_EQ(s.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(s.find("<title>title &lt;1&gt;</title>"), std::string::npos);
  EXPECT_NE(s.find(">x &lt; y &amp; z</text>"), std::string::npos);
  EXPECT_NE(s.find("<title>tip &quot;q&quot;</title></rect>"), std::string::npos);
  EXPECT_EQ(s.substr(s.size() - 7), "</svg>\n");
  EXPECT_EQ(s.find("<script"), std::string::npos);
}

TEST(Svg, NumbersAreShortAndFinite) {
  EXPECT_EQ(svg_num(0.5), "0.5");
  EXPECT_EQ(svg_num(612.35), "612.35");
  EXPECT_EQ(svg_num(1.0 / 0.0), "0");
}

TEST(PlotFrame, TicksAreRoundAndCoverTheRange) {
  const std::vector<double> want = {0, 0.2, 0.4, 0.6, 0.8, 1.0}, got = nice_ticks(0, 1, 5);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12);
  const auto t = nice_ticks(-3.7, 12.2, 5);
  ASSERT_FALSE(t.empty());
  EXPECT_GE(t.front(), -3.7);
  EXPECT_LE(t.back(), 12.2);
  EXPECT_DOUBLE_EQ(t[1] - t[0], 5.0);
}

TEST(PlotFrame, MapsLinearAndLogAxes) {
  PlotFrame f{10, 0, 110, 100, {1, 16, true, "x"}, {0, 10, false, "y"}};
  EXPECT_DOUBLE_EQ(f.px(1), 10);
  EXPECT_DOUBLE_EQ(f.px(4), 60);  // log2: halfway between 1 and 16
  EXPECT_DOUBLE_EQ(f.py(0), 100);
  EXPECT_DOUBLE_EQ(f.py(10), 0);
  double lo = 2, hi = 2;
  pad_range(lo, hi);
  EXPECT_LT(lo, 2);
  EXPECT_GT(hi, 2);
}

TEST(Figures, ColourMapIsMonotoneInBrightness) {
  auto brightness = [](const std::string& c) {
    return std::stoi(c.substr(1, 2), nullptr, 16) + std::stoi(c.substr(3, 2), nullptr, 16) + std::stoi(c.substr(5, 2), nullptr, 16);
  };
  int last = -1;
  for (int i = 0; i <= 10; ++i) {
    const int b = brightness(sequential_colour(i / 10.0));
    EXPECT_GT(b, last) << i;
    last = b;
  }
  EXPECT_EQ(sequential_colour(0.0 / 0.0), "#bbbbbb");
}

}  // namespace
}  // namespace triattn
