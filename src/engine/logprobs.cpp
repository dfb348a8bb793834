#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"

namespace triattn {

TokenLogprob token_logprob(std::span<const float> logits, int32_t id, int top) {
  if (id < 0 || static_cast<size_t>(id) >= logits.size()) fail("logprobs: token id ", id, " is outside the vocabulary");
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double max = -kInf;
  for (float x : logits) max = std::max(max, static_cast<double>(x));
  // log p = x - log Σ exp(x), shifted by the largest logit. Limits instead of NaN: with +inf
  // logits they share all the mass; with every logit -inf nothing is likely.
  std::function<float(int32_t)> lp;
  if (max == kInf) {
    const double n_inf = static_cast<double>(std::count(logits.begin(), logits.end(), static_cast<float>(kInf)));
    lp = [&, n_inf](int32_t t) {
      return logits[static_cast<size_t>(t)] == static_cast<float>(kInf) ? static_cast<float>(-std::log(n_inf))
                                                                        : static_cast<float>(-kInf);
    };
  } else if (max == -kInf) {
    lp = [](int32_t) { return static_cast<float>(-kInf); };
  } else {
    double sum = 0;
    for (float x : logits) sum += std::exp(static_cast<double>(x) - max);
    const double log_z = max + std::log(sum);
    lp = [&, log_z](int32_t t) { return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(t)]) - log_z); };
  }

  TokenLogprob r;
  r.id = id;
  r.logprob = lp(id);
  const size_t k = std::min(static_cast<size_t>(std::max(top, 0)), logits.size());
  if (k > 0) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    auto more_likely = [&](int32_t a, int32_t b) {
      const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
      return la != lb ? la > lb : a < b;
    };
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), more_likely);
    for (size_t i = 0; i < k; ++i) r.top.emplace_back(ids[i], lp(ids[i]));
  }
  return r;
}

}  // namespace triattn
