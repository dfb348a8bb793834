#pragma once
// The scheduler tests' shared fixture: the TinyStories model, a thread pool, calibrated
// statistics, a full-attention and a TriAttention (B = 32, β = 8, W = 8) policy factory,
// synthetic prompts and greedy requests.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "engine/scheduler.h"
#include "engine_test_util.h"

namespace triattn::test {

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::load(test::kTinyStories);
    pool_ = std::make_unique<ThreadPool>(2);
    stats_ = test::calibrated_stats(*model_);
    full_ = std::make_unique<PolicyFactory>(*model_, KvSettings{});
    KvSettings t;
    t.policy = "triattention";
    t.params.budget = 32;
    t.params.divide_length = 8;
    t.params.window = 8;
    t.params.stats = stats_;
    tri_ = std::make_unique<PolicyFactory>(*model_, t);
  }
  static void TearDownTestSuite() {
    full_.reset();
    tri_.reset();
    model_.reset();
    pool_.reset();
  }
  static std::vector<int32_t> prompt(int n, int salt) {
    std::vector<int32_t> p = {1};
    for (int i = 1; i < n; ++i) p.push_back(3 + (i * 37 + salt * 101) % 2000);
    return p;
  }
  static Request request(std::vector<int32_t> p, int64_t n, const PolicyFactory& f,
                         std::map<uint64_t, GenerateResult>* out, uint64_t* id_slot = nullptr) {
    Request r;
    r.prompt = std::move(p);
    r.options.n_predict = n;
    r.options.stop_at_eog = false;
    r.sampling.temperature = 0;
    r.policies = &f;
    r.on_done = [out, id_slot](int, const GenerateResult& g) { (*out)[id_slot ? *id_slot : out->size()] = g; };
    return r;
  }
  static GenerateResult alone(const std::vector<int32_t>& p, int64_t n, const PolicyFactory& f) {
    return greedy_run(*model_, f, p, n, pool_.get());
  }
  static inline std::shared_ptr<const Model> model_;
  static inline std::unique_ptr<ThreadPool> pool_;
  static inline std::shared_ptr<const HeadStats> stats_;
  static inline std::unique_ptr<PolicyFactory> full_, tri_;
};

}  // namespace triattn::test
