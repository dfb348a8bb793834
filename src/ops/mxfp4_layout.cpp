#include "ops/mxfp4_layout.h"

namespace triattn::ops {

void mxfp4_from_hf(const uint8_t* blocks, const uint8_t* scales, int64_t n, BlockMxfp4* out) {
  for (int64_t b = 0; b < n; ++b) {
    const uint8_t* src = blocks + 16 * b;
    uint8_t code[kQK];
    for (int j = 0; j < 16; ++j) {
      code[2 * j] = src[j] & 0xF;
      code[2 * j + 1] = src[j] >> 4;
    }
    out[b].e = scales[b];
    for (int j = 0; j < 16; ++j) out[b].qs[j] = static_cast<uint8_t>(code[j] | (code[j + 16] << 4));
  }
}

void mxfp4_to_hf(const BlockMxfp4* in, int64_t n, uint8_t* blocks, uint8_t* scales) {
  for (int64_t b = 0; b < n; ++b) {
    uint8_t code[kQK];
    for (int j = 0; j < 16; ++j) {
      code[j] = in[b].qs[j] & 0xF;
      code[j + 16] = in[b].qs[j] >> 4;
    }
    scales[b] = in[b].e;
    for (int j = 0; j < 16; ++j) blocks[16 * b + j] = static_cast<uint8_t>(code[2 * j] | (code[2 * j + 1] << 4));
  }
}

}  // namespace triattn::ops
