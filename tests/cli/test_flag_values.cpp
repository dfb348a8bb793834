// Every numeric flag of `generate` given every kind of hostile value (README
// "Limits on what input can cost"): negative, zero, just past 32 bits, past 64 bits, not a
// number, infinite, empty, text. Each run must end quickly with exit 0 (a value in range),
// 1 (a named error) or 2 (a parse error), never a crash, an abort or a hang (run_triattn stops
// a hang after its timeout with 124, which fails here). The model is stories260k, whose 512-token
// context caps any accepted -n.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_run.h"

using triattn::test::run_triattn;
using triattn::test::shared_path;

TEST(FlagValues, NoValueOfANumericFlagCrashesOrHangs) {
  const std::string model = shared_path("models/stories260k/stories260K.bin");
  const std::vector<std::string> flags = {"-n", "-t", "--kv-budget", "--divide-length", "--window", "--sink",
                                          "--obs-window", "--pool-kernel", "--rkv-lambda", "--rkv-threshold",
                                          "--kv-seed", "--prefill-chunk", "--ctx", "--temp", "--top-k", "--top-p",
                                          "--min-p", "--repeat-penalty", "--repeat-last-n", "--seed",
                                          "--frequency-penalty", "--presence-penalty", "--logit-bias"};
  const std::vector<std::string> values = {"-1", "0", "4294967297", "99999999999999999999", "nan", "inf",
                                           "-inf", "1e999", "", "x"};
  for (const std::string& f : flags) {
    for (const std::string& v : values) {
      // A policy that reads the compression knobs, so they are not ignored; for -n the full
      // cache, so that an accepted -n stops at the context instead of generating for hours
      // (a compressing policy generates past the context by design).
      std::vector<std::string> args = {"generate", "-m", model, "-p", "Once", "--kv-policy",
                                       f == "-n" ? "full" : "snapkv", f, v};
      if (f != "-n") args.insert(args.end(), {"-n", "4"});
      const auto r = run_triattn(args);
      EXPECT_TRUE(r.rc == 0 || r.rc == 1 || r.rc == 2) << f << " " << v << ": exit " << r.rc << "\n" << r.err;
      if (f == "-n" && (v == "4294967297" || v == "99999999999999999999")) {
        EXPECT_EQ(r.rc, 1) << f << " " << v << ": " << r.err;  // past the 32-bit positions
      }
      if (r.rc == 1) { EXPECT_NE(r.err.find("error:"), std::string::npos) << f << " " << v << ": " << r.err; }
    }
  }
}

// serve's own flags: a value that would turn a protection off, or make no sense, is refused by
// name before anything listens (an empty --api-key used to mean "no authentication").
TEST(FlagValues, ServeRefusesValuesThatWouldWeakenIt) {
  const std::string model = shared_path("models/stories260k/stories260K.bin");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--api-key", ""},          {"--http-threads", "0"},   {"--max-connections", "0"},
      {"--read-timeout", "0"},    {"--idle-timeout", "-1"},  {"--write-timeout", "nan"},
      {"--max-tokens-limit", "-1"}, {"--request-timeout", "-5"}, {"--drain-timeout", "-1"},
      {"--drain-timeout", "nan"}, {"--replica-name", ""}};
  for (const auto& [flag, value] : cases) {
    const auto r = run_triattn({"serve", "-m", model, "--port", "0", flag, value});
    EXPECT_TRUE(r.rc == 1 || r.rc == 2) << flag << " '" << value << "': exit " << r.rc << "\n" << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << flag << " '" << value << "': " << r.err;
  }
}
