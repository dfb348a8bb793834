// `triattn bench-serve` against a server in this process: every request of every level is
// counted, none fails, the server's figures come back (what it measures, not how fast).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "server/server.h"

namespace triattn::test {
namespace {

TEST(BenchServe, CountsEveryRequestAndReadsTheServersFigures) {
  server::ServerOptions o;
  o.port = 0;
  o.threads = 1;
  server::Server s(Model::load(shared_path("models/tinystories-656k")), o);
  s.start();
  const RunResult r = run_triattn({"bench-serve", "--url", "http://127.0.0.1:" + std::to_string(s.port()),
                                   "--concurrency", "1,3", "--requests-per-client", "2", "--prompt-tokens", "16",
                                   "--gen-tokens", "40", "--vocab", "2048", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["levels"].size(), 2u);
  for (const auto& lv : j["levels"]) {
    EXPECT_EQ(lv["requests"], 2 * lv["concurrency"].get<int>());
    EXPECT_EQ(lv["errors"], 0);
    EXPECT_GT(lv["gen_tok_s"].get<double>(), 0);
    EXPECT_GT(lv["ttft_ms_p50"].get<double>(), 0);
  }
  EXPECT_EQ(run_triattn({"bench-serve", "--url", "localhost"}).rc, 1);  // not http://HOST:PORT
}

}  // namespace
}  // namespace triattn::test
