// The restricted unpickler on hand-assembled pickles.
#include <gtest/gtest.h>

#include <string>

#include "calib/pickle_reader.h"
#include "calib_test_util.h"

using namespace triattn;
using triattn::test::error_of;
using calib_test::load_pickle;
using namespace std::string_literals;

TEST(PickleReader, ScalarsContainersAndMemo) {
  // {"a": [1, -2, 70000, -3 (LONG1), 1.5, True, None], "b": ("x", <memo of the list>)}
  std::string p = "\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01]q\x02(K\x01J\xfe\xff\xff\xffJ\x70\x11\x01\x00"
                  "\x8a\x01\xfdG\x3f\xf8\x00\x00\x00\x00\x00\x00\x88Ne"
                  "\x8c\x01" "bX\x01\x00\x00\x00xh\x02\x86u."s;
  PyRef v = load_pickle(p);
  ASSERT_EQ(v->kind, PyValue::Kind::Dict);
  const PyValue* a = v->get("a");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->kind, PyValue::Kind::List);
  ASSERT_EQ(a->items.size(), 7u);
  EXPECT_EQ(a->items[0]->i, 1);
  EXPECT_EQ(a->items[1]->i, -2);
  EXPECT_EQ(a->items[2]->i, 70000);
  EXPECT_EQ(a->items[3]->i, -3);
  EXPECT_DOUBLE_EQ(a->items[4]->f, 1.5);
  EXPECT_TRUE(a->items[5]->b);
  EXPECT_EQ(a->items[6]->kind, PyValue::Kind::None);
  const PyValue* b = v->get("b");
  ASSERT_TRUE(b);
  ASSERT_EQ(b->kind, PyValue::Kind::Tuple);
  EXPECT_EQ(b->items[0]->s, "x");
  EXPECT_EQ(b->items[1].get(), a);  // memo shares the object
}

TEST(PickleReader, RefusesArbitraryGlobalsAndUnknownOpcodes) {
  EXPECT_NE(error_of([] { load_pickle("\x80\x02" "cos\nsystem\n."s); }).find("refusing pickle global 'os.system'"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_pickle("\x80\x02" "cbuiltins\neval\n."s); }).find("refusing"), std::string::npos);
  EXPECT_NE(error_of([] { load_pickle("\x80\x02" "I1\n."s); }).find("unsupported pickle opcode"), std::string::npos);
}

TEST(PickleReader, MalformedStreamsAreErrors) {
  EXPECT_NE(error_of([] { load_pickle("\x80\x02}(X\x05\x00\x00\x00" "ab"s); }).find("truncated"), std::string::npos);
  EXPECT_NE(error_of([] { load_pickle("\x80\x02K\x01K\x02."s); }).find("STOP with 2"), std::string::npos);
  EXPECT_NE(error_of([] { load_pickle("\x80\x02h\x07."s); }).find("memo key 7"), std::string::npos);
  EXPECT_NE(error_of([] { load_pickle("\x80\x02]K\x01K\x02s."s); }).find("expected a dict"), std::string::npos);
  EXPECT_NE(error_of([] { load_pickle("\x80\x02" "R."s); }).find("underflow"), std::string::npos);
  EXPECT_THROW(load_pickle(""), Error);
}
