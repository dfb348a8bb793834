#pragma once
// Writes statistics as the official implementation's calibrate script saves them (calib/pt_stats.h
// reads them): torch.save of {"metadata": {..., "head_dim", "rope_style": "half", "sampled_heads"},
// "stats": {"layerLL_headHH": {"q_mean_real", "q_mean_imag", "q_abs_mean"}}}, a zip of a
// protocol-2 pickle and one little-endian f32 storage per tensor, as torch lays it out.
#include <string>
#include <vector>

#include "kv/policy.h"

namespace triattn {

// `archive` is the folder every entry lies under (torch uses the file's stem).
std::vector<uint8_t> pt_stats_bytes(const HeadStats& s, const std::string& archive);

}  // namespace triattn
