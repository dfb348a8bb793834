// Reference cycles through the pickle memo (docs/reliability.md): a in b and b in a would leak the
// shared_ptrs that hold them (LeakSanitizer reports it; tests/data/fuzz_regressions/fuzz_pickle
// holds the same streams). The reader refuses to change a container once it is inside
// another, which is what every cycle needs and what pickle's writers never do.
#include <gtest/gtest.h>

#include <string>

#include "calib/pickle_reader.h"
#include "calib_test_util.h"

using namespace triattn;
using triattn::test::error_of;
using calib_test::load_pickle;
using namespace std::string_literals;

namespace {
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST(PickleCycles, ListsThatHoldEachOtherAreRefused) {
  // a = [] (memo 0); b = [] (memo 1); b.append(a); a.append(b)
  const std::string e = error_of([] { load_pickle("\x80\x02]q\x00]q\x01h\x00" "aa."s); });
  EXPECT_TRUE(has(e, "test.pkl: a list changed after it was put inside another container")) << e;
  EXPECT_TRUE(has(e, "at byte 11")) << e;
}

TEST(PickleCycles, DictKeyedByAListThatHoldsItIsRefused) {
  // d = {} (memo 0); l = [] (memo 1); l.append(d); d[l] = "k"
  const std::string e = error_of([] { load_pickle("\x80\x02}q\x00]q\x01h\x00" "a\x8c\x01ks."s); });
  EXPECT_TRUE(has(e, "a dict changed after it was put inside another container")) << e;
}

TEST(PickleCycles, TupleMemberChangedLaterIsRefused) {
  // l = [] (memo 0); t = (l,); l.append(1): no cycle, but a change under a parent whose depth
  // was already taken (how a chain could grow past kMaxPickleDepth unseen).
  const std::string e = error_of([] { load_pickle("\x80\x02]q\x00\x85h\x00K\x01" "a."s); });
  EXPECT_TRUE(has(e, "a list changed after it was put inside another container")) << e;
}

TEST(PickleCycles, SharedValuesStillLoad) {
  // l = [1]; {"a": l, "b": (l, l)}: one object in three places, built before it is nested.
  PyRef v = load_pickle("\x80\x02}q\x00(\x8c\x01" "a]q\x01K\x01" "a\x8c\x01" "bh\x01h\x01\x86u."s);
  ASSERT_EQ(v->kind, PyValue::Kind::Dict);
  const PyValue* a = v->get("a");
  const PyValue* b = v->get("b");
  ASSERT_TRUE(a && b);
  ASSERT_EQ(b->items.size(), 2u);
  EXPECT_EQ(b->items[0].get(), a);
  EXPECT_EQ(b->items[1].get(), a);
  EXPECT_EQ(a->items.size(), 1u);
}
