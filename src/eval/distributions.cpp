#include "eval/distributions.h"

#include <cmath>
#include <vector>

#include "core/error.h"

namespace triattn::eval {

namespace {
double log_sum_exp(std::span<const float> v, double max) {
  double s = 0;
  for (float x : v) s += std::exp(static_cast<double>(x) - max);
  return max + std::log(s);
}
double max_of(std::span<const float> v) {
  double m = -INFINITY;
  for (float x : v) m = std::max(m, static_cast<double>(x));
  return m;
}
}  // namespace

double nll_of(std::span<const float> logits, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= logits.size()) fail("token id ", id, " is outside the vocabulary");
  return log_sum_exp(logits, max_of(logits)) - logits[static_cast<size_t>(id)];
}

double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits) {
  if (p_logits.size() != q_logits.size()) fail("kl_divergence: vocabularies differ");
  const double lp = log_sum_exp(p_logits, max_of(p_logits)), lq = log_sum_exp(q_logits, max_of(q_logits));
  double kl = 0;
  for (size_t i = 0; i < p_logits.size(); ++i) {
    const double a = p_logits[i] - lp, b = q_logits[i] - lq;
    kl += std::exp(a) * (a - b);
  }
  return std::max(0.0, kl);
}

}  // namespace triattn::eval
