#include "kv/policies/shared_knobs.h"

#include "core/error.h"
#include "kv/policy_knob.h"

namespace triattn {
namespace {

// Queries kept per query head: w · head_dim floats each, for every head of every layer.
constexpr int64_t kMaxObsWindow = 65536;
constexpr int64_t kMaxPoolKernel = 4095;

}  // namespace

const PolicyKnob& obs_window_knob() {
  static const PolicyKnob knob = [] {
    PolicyKnob k = count_knob("--obs-window", &PolicyParams::obs_window, 1, kMaxObsWindow,
                              "w: the last queries whose attention over the cache scores it");
    k.check = [](const PolicyParams& p, std::string_view who) {
      if (p.obs_window < 1 || p.obs_window > kMaxObsWindow)
        fail("--obs-window (", who, ") must be between 1 and ", kMaxObsWindow, " queries, got ", p.obs_window);
    };
    return k;
  }();
  return knob;
}

const PolicyKnob& pool_kernel_knob() {
  static const PolicyKnob knob = [] {
    PolicyKnob k = count_knob("--pool-kernel", &PolicyParams::pool_kernel, 1, kMaxPoolKernel,
                              "max-pooling width (odd) over neighbouring candidates' scores");
    k.check = [](const PolicyParams& p, std::string_view who) {
      if (p.pool_kernel < 1 || p.pool_kernel > kMaxPoolKernel || p.pool_kernel % 2 == 0)
        fail("--pool-kernel (", who, ") must be an odd width between 1 and ", kMaxPoolKernel,
             " (it is centred on each key), got ", p.pool_kernel);
    };
    return k;
  }();
  return knob;
}

}  // namespace triattn
