#pragma once
// The official TriAttention implementation's stats file: torch.save of
//   {"metadata": {"head_dim": int, "rope_style": "half", "sampled_heads": [[l, h], ...], ...},
//    "stats": {"layerLL_headHH": {"q_mean_real", "q_mean_imag", "q_abs_mean"}: [d/2] floats}}
// "half" pairing is our band order, so the values load as they are. Key statistics are not
// in that file (HeadStats::k_* stay empty). Every query head of every layer must be present.
#include <string>

#include "kv/policy.h"

namespace triattn {

struct PtStats {
  HeadStats stats;          // n_kv_heads = 0: the file does not record it
  std::string rope_style;   // "half" ("" when the metadata omits it)
};

PtStats read_pt_stats(const std::string& path);

}  // namespace triattn
