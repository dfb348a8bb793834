#pragma once
// One numpy .npy array (the entries of an .npz): "\x93NUMPY", version, header length, then
// a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (64,), } padded
// with spaces to a 64-byte boundary, then the raw data. Only what statistics use is read:
// little-endian floats ('<f2', '<f4', '<f8'), booleans ('|b1') and UTF-32 strings ('<U'),
// C order. Anything else is an Error naming the entry.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace triattn {

struct NpyArray {
  std::string descr;
  std::vector<int64_t> shape;
  std::span<const uint8_t> data;  // a view into the bytes given to parse_npy
  int64_t numel() const;
};

// `where` names the array in messages ("stats.npz: entry 'l_0_h_0_q_abs_mean.npy'").
NpyArray parse_npy(std::span<const uint8_t> bytes, const std::string& where);
// The values as floats ('<f2', '<f4' as they are, '<f8' rounded); Error for other types.
std::vector<float> npy_floats(const NpyArray& a, const std::string& where);
// A version 1.0 .npy of a 1-D '<f4' array.
std::vector<uint8_t> npy_f32_bytes(std::span<const float> values);

}  // namespace triattn
