#pragma once
// The two binary "TRIA" statistics formats (magic u32 0x54524941, little-endian), both
// query-only and "half"-paired (band f = x[f], x[f + d/2]):
//
// tria-v1, the llama.cpp TurboQuant fork's .triattention (its calibrate-triattention.py):
//   u32 magic, u32 version = 1, u32 head_dim, u32 num_layers, u32 num_attn_heads,
//   u32 num_kv_heads, f64 rope_theta, u32 rope_style (0 = half, 1 = interleaved),
//   u32 n_sampled, u32 freq_count (= head_dim / 2), u32 name_len, u8 name[name_len];
//   n_sampled times: u32 layer, u32 head, f32 q_mean_real[freq_count], q_mean_imag[..],
//   q_abs_mean[..], r_f[..] (a derived check value, not read).
// tria-v2, triattention-ggml's (triattention_calibrate.py; its TRIA_FORMAT.md):
//   64-byte header: u32 magic, u32 version (1 or 2), u32 num_layers, u32 num_heads,
//   u32 num_kv_heads, u32 head_dim, u32 freq_count, f32 rope_theta, f32 attn_scale, 28 reserved
//   bytes (zero); version 2: f32 layer_budget_scales[num_layers]; then every head, layer-major:
//   f32 q_mean_real[freq_count], q_mean_imag[..], q_abs_mean[..], mrl[..].
// Both call themselves version 1 in their first release: a version-1 file is read in the layout
// whose sizes add up to the file's. Heads either writer fills with zeros (no data captured)
// are refused, as is rope_style 1 (interleaved bands are other coordinates' statistics).
// Neither records a weights fingerprint: loading warns that the identity cannot be verified.
#include <string>
#include <vector>

#include "calib/stats_file.h"

namespace triattn {

inline constexpr uint32_t kTriaMagic = 0x54524941;  // "TRIA" as a little-endian u32: bytes "AIRT"

LoadedStats read_tria_stats(const std::string& path);

// Need info.n_kv_heads and info.rope_theta (and for v2 info.rope_attn_factor); Error naming
// the missing field otherwise. v1 writes r_f = |mean| / abs_mean (its documented meaning), v2
// writes every layer budget scale 1 (one budget for all layers, as triattn prunes).
std::vector<uint8_t> tria_v1_bytes(const HeadStats& s, const StatsInfo& info, const std::string& path);
std::vector<uint8_t> tria_v2_bytes(const HeadStats& s, const StatsInfo& info, const std::string& path);

}  // namespace triattn
