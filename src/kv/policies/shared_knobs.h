#pragma once
// The knobs more than one policy reads, described once: the observation window (snapkv, rkv)
// and the max-pooling width (snapkv, rkv, triattention-split). Their checks name the policy.
#include "kv/policy.h"

namespace triattn {

const PolicyKnob& obs_window_knob();
const PolicyKnob& pool_kernel_knob();

}  // namespace triattn
