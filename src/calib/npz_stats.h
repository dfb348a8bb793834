#pragma once
// The official implementation's MLX port (triattention/mlx) reads its statistics from a numpy
// .npz (np.savez: a zip of stored .npy arrays) with one 1-D array per head and statistic:
//   l_<layer>_h_<head>_q_mean_real, l_<layer>_h_<head>_q_mean_imag, l_<layer>_h_<head>_q_abs_mean
// each [head_dim / 2], "half"-paired (its RoPE inverse splits the head into halves). Nothing
// else: no KV head count, no RoPE, no model identity. Its calibrate_mlx.py writes only a
// placeholder without statistics (model_type, calibrated = [False], note); that file is
// refused by name. A 'calibrated' array is read when present (it must be true); any other
// entry is refused.
#include <string>
#include <vector>

#include "calib/stats_file.h"

namespace triattn {

LoadedStats read_npz_stats(const std::string& path);
std::vector<uint8_t> npz_stats_bytes(const HeadStats& s);

}  // namespace triattn
