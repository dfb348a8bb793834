// Random eviction (the floor any method must beat): every candidate gets a uniform score
// drawn from --kv-seed, the pruning event (p, the tokens processed so far), the stream and
// the token's position, so a run is reproducible and each event draws afresh. Scores are
// u = (splitmix64 chain of (seed, p, layer, kv_head, position) >> 40) / 2^24, exact floats,
// which the numpy reference (tests/reference/policies_ref.py) recomputes bit for bit.
#include <limits>

#include "kv/policies/policies.h"
#include "kv/policies/policy_base.h"
#include "kv/policies/scored_policy.h"
#include "kv/policy_knob.h"

namespace triattn {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

class RandomPolicy final : public PolicyBase<RandomPolicy, ScoredPolicy, describe_random> {
 public:
  using PolicyBase::PolicyBase;

 protected:
  void begin_event(const KvCache& cache, int) override { p_ = cache.n_processed(); }
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int) override {
    const int32_t* pos = cache.positions(layer, kv_head);
    uint64_t h = splitmix64(params_.seed);
    h = splitmix64(h ^ static_cast<uint64_t>(p_));
    h = splitmix64(h ^ static_cast<uint64_t>(layer));
    h = splitmix64(h ^ static_cast<uint64_t>(kv_head));
    for (size_t i = 0; i < split.candidates.size(); ++i) {
      const uint64_t r = splitmix64(h ^ static_cast<uint64_t>(pos[split.candidates[i]]));
      scores[i] = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);
    }
  }

 private:
  int64_t p_ = 0;
};

}  // namespace

const PolicyDescription& describe_random() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "random";
    i.description = "random eviction, reproducible from --kv-seed (the floor every method must beat)";
    i.prunes = true;
    i.params = {count_knob("--kv-seed", &PolicyParams::seed, 0, std::numeric_limits<int64_t>::max(),
                           "the seed of the draw")};
    i.make = [](const PolicyParams& p, const AttentionGeometry&) -> std::unique_ptr<KvPolicy> {
      return std::make_unique<RandomPolicy>(p);
    };
    return i;
  }();
  return d;
}

}  // namespace triattn
