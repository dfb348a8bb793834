// ops::select_isa, the one way a program overrides the detected instruction set: every kernel
// follows it, and a name this CPU cannot run is refused with the ones it can.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "ops/ops.h"

namespace triattn::ops {
namespace {

// Each test runs in a process of its own under CTest, but the aarch64 stage runs a binary's tests
// in one process: neither test assumes the other has not run.
TEST(IsaSelect, NamedIsaBecomesActive) {
  for (Isa isa : supported_isas()) {
    select_isa(isa_name(isa));
    EXPECT_EQ(active_isa(), isa);
    EXPECT_TRUE(isa_selected());
  }
  select_isa(isa_name(supported_isas().back()));
}

TEST(IsaSelect, UnknownOrUnsupportedNameIsRefused) {
  const Isa before = active_isa();
  const bool selected_before = isa_selected();
  for (const char* name : {"sse9", "", "AVX2"}) {
    try {
      select_isa(name);
      ADD_FAILURE() << "accepted " << name;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(std::string(name) + ": not an instruction set this CPU runs (supported: scalar", 0), 0u)
          << msg;
    }
  }
#if defined(__x86_64__)
  EXPECT_THROW(select_isa("neon"), Error);
#else
  EXPECT_THROW(select_isa("avx2"), Error);
#endif
  EXPECT_EQ(active_isa(), before);
  EXPECT_EQ(isa_selected(), selected_before);
}

}  // namespace
}  // namespace triattn::ops
