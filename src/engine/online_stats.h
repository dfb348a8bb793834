#pragma once
// --stats auto: the OnlineStats a policy measures its sequence with (kv/online_stats.h), the
// calibration accumulator itself (calib/stats_accumulator.h), so that online and offline
// statistics of the same queries are the same numbers.
#include <memory>

#include "kv/online_stats.h"

namespace triattn {

// For PolicyParams::online_stats: the layers with a KV cache are observed, as in calibration.
std::unique_ptr<OnlineStats> make_online_stats(const AttentionGeometry& geometry);

}  // namespace triattn
