#pragma once
// Shared by the model-family tests: logits of a forward pass over a token sequence, in one
// prefill call or token by token (decode), and the relative difference of two logit sets.
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "model/forward.h"
#include "model/kv_shape.h"

namespace triattn::test {

// Logits of every position of ids (an F32 cache), prefilled at once or one token per call.
inline std::vector<float> run_all(Forward& fwd, const ModelConfig& c, std::span<const int32_t> ids,
                                  bool one_by_one) {
  KvCache cache(kv_cache_shape(c, DType::F32));
  std::vector<std::vector<float>> out;
  std::vector<float> logits;
  if (!one_by_one) {
    ForwardItem item{&cache, ids, ForwardItem::Logits::All};
    fwd.run(std::span<const ForwardItem>(&item, 1), out);
    return out[0];
  }
  for (size_t t = 0; t < ids.size(); ++t) {
    ForwardItem one{&cache, ids.subspan(t, 1), ForwardItem::Logits::Last};
    fwd.run(std::span<const ForwardItem>(&one, 1), out);
    logits.insert(logits.end(), out[0].begin(), out[0].end());
  }
  return logits;
}

// max |a - b| / max |b|.
inline float rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return worst / scale;
}

}  // namespace triattn::test
