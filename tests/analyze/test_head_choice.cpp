// --heads parsing (errors name the item and the model's shape) and the default
// choice of detailed heads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "analyze/head_choice.h"
#include "core/error.h"

namespace triattn {
namespace {

std::string error_of(const std::string& text, int layers = 4, int heads = 8) {
  try {
    parse_head_list(text, layers, heads);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HeadList, ParsesItemsWithSpacesAndDropsDuplicates) {
  const auto h = parse_head_list(" 0:1, 3:7 ,0:1", 4, 8);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].layer, 0);
  EXPECT_EQ(h[0].head, 1);
  EXPECT_EQ(h[1].layer, 3);
  EXPECT_EQ(h[1].head, 7);
  EXPECT_EQ(h[0].why, "--heads");
}

TEST(HeadList, BadItemsAreNamed) {
  EXPECT_NE(error_of("1").find("'1' is not LAYER:HEAD"), std::string::npos) << error_of("1");
  EXPECT_NE(error_of("0:1,,2:2").find("'' is not LAYER:HEAD"), std::string::npos);
  EXPECT_NE(error_of("a:b").find("'a:b'"), std::string::npos);
  EXPECT_NE(error_of("-1:0").find("not LAYER:HEAD"), std::string::npos);
  const std::string layer = error_of("4:0");
  EXPECT_NE(layer.find("layer 4 does not exist"), std::string::npos) << layer;
  EXPECT_NE(layer.find("4 layers (0-3)"), std::string::npos) << layer;
  const std::string head = error_of("0:8");
  EXPECT_NE(head.find("head 8 does not exist"), std::string::npos) << head;
  EXPECT_NE(head.find("8 query heads per layer (0-7)"), std::string::npos) << head;
}

TEST(DefaultHeads, SpreadOverLayersPlusTheExtremes) {
  // 3 layers x 2 heads; the most concentrated is 1:1, the least 2:1.
  const std::vector<double> w = {0.5, 0.6, 0.7, 0.99, 0.4, 0.1};
  const auto h = default_heads(w, 3, 2);
  ASSERT_EQ(h.size(), 5u);
  EXPECT_EQ(h[0].why, "first layer");
  EXPECT_EQ(h[1].layer, 1);
  EXPECT_EQ(h[2].layer, 2);
  EXPECT_EQ(h[3].layer, 1);
  EXPECT_EQ(h[3].head, 1);
  EXPECT_NE(h[3].why.find("most concentrated (weighted R 0.990)"), std::string::npos);
  EXPECT_EQ(h[4].layer, 2);
  EXPECT_EQ(h[4].head, 1);
}

TEST(DefaultHeads, AHeadPickedTwiceIsListedOnceWithBothReasons) {
  const std::vector<double> w = {0.9, 0.2};  // 1 layer: first = middle = last = 0:0 = most concentrated
  const auto h = default_heads(w, 1, 2);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].why, "first layer, middle layer, last layer, most concentrated (weighted R 0.900)");
  EXPECT_EQ(h[1].head, 1);
}

}  // namespace
}  // namespace triattn
