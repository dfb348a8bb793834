#pragma once
// Quantized block layouts, byte for byte as GGML/GGUF store them, so tensors in a GGUF file
// are used in place. Also the activation-side blocks (ActQ8, ActQ8K) that matmul quantizes
// the input rows into; those are internal (never stored in files) and use f32 scales.
#include <cstdint>

namespace triattn::ops {

constexpr int kQK = 32;    // elements per Q8_0 / Q4_0 block
constexpr int kQKK = 256;  // elements per K-quant super-block

// value = qs[i] * d
struct BlockQ8_0 {
  uint16_t d;  // f16
  int8_t qs[kQK];
};

// Element j in the low nibble of qs[j], element j+16 in the high nibble; value = (q-8) * d.
struct BlockQ4_0 {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};

// 8 sub-blocks of 32. Sub-block j has 6-bit scale sc_j and 6-bit min m_j packed in `scales`
// (see unpack_scale_min_k4); value = d*sc_j*q - dmin*m_j with q the 4-bit quant.
// Quants come in 4 chunks of 64: chunk c holds sub-block 2c in the low nibbles of
// qs[32c .. 32c+32) and sub-block 2c+1 in the high nibbles.
struct BlockQ4_K {
  uint16_t d;     // f16 scale of the scales
  uint16_t dmin;  // f16 scale of the mins
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};

// As Q4_K plus a fifth bit: for chunk c, bit 2c of qh[l] is the high bit of element 64c+l
// and bit 2c+1 that of element 64c+32+l.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};

// 16 sub-blocks of 16 with int8 scales; value = d * scales[s] * (q - 32), q 6 bits.
// Two halves of 128; in half h, for l in [0,32):
//   element 128h+l    : low nibble of ql[64h+l],    bits 0-1 of qh[32h+l], scale 8h+l/16
//   element 128h+32+l : low nibble of ql[64h+32+l], bits 2-3,             scale 8h+2+l/16
//   element 128h+64+l : high nibble of ql[64h+l],   bits 4-5,             scale 8h+4+l/16
//   element 128h+96+l : high nibble of ql[64h+32+l],bits 6-7,             scale 8h+6+l/16
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;  // f16, at the end
};

// Q8_0x4 (DType::Q8_0x4, made at load time from Q8_0; never in a file): rows 4g..4g+3 of a
// matrix interleaved. Group g holds, for each block column b in order, one BlockQ8_0x4: the
// four rows' scales, then their quants in four chunks of 8 elements,
//   qs[32c + 8r + k] = quant 8c + k of row 4g + r's block b   (c, r < 4, k < 8).
// One 32-byte load at qs + 32c is chunk c of all four rows: a byte dot product with the
// activation chunk broadcast four times gives two int32 lanes per row, and the four scales
// convert to float in one instruction. (Decode on Q8_0 rows spent over half its time on the
// per-block scalar scale and the sign fix-ups; this layout shares them across four rows.)
// Group g starts at byte 4g * row_bytes(Q8_0, cols): the same total size as Q8_0.
struct BlockQ8_0x4 {
  uint16_t d[4];  // f16, rows 0..3
  int8_t qs[4 * kQK];
};

// Q8_0x16 (DType::Q8_0x16, made at load time from Q8_0 where the kernels have 512-bit byte
// dot products; never in a file): rows 16g..16g+15 of a matrix interleaved, one row per 32-bit
// lane. Group g holds, for each block column b in order, one BlockQ8_0x16: the sixteen rows'
// scales, then their quants in eight chunks of 4 elements, each offset by 128,
//   qs[64c + 4r + i] = (quant 4c + i of row 16g + r's block b) + 128   (c < 8, r < 16, i < 4).
// One 64-byte load at qs + 64c is chunk c of all sixteen rows, already the unsigned operand
// of vpdpbusd: against four activation bytes broadcast to every lane it adds one row's
// partial sum per lane, so a block column is 8 dot products with no shuffles and no sums
// across lanes, and one conversion, one scale product and one FMA per 16 rows and token
// (Q8_0x4's 512-bit kernel needs two of each per 8 rows, plus the 8-byte broadcasts and the
// lane-pair sums). The offset costs 128 x the activation block's quant sum per row, the same
// for every lane. Group g starts at byte 16g * row_bytes(Q8_0, cols): the same size as Q8_0.
struct BlockQ8_0x16 {
  uint16_t d[16];  // f16, rows 0..15
  uint8_t qs[16 * kQK];
};

// Q4_Kx8 (DType::Q4_Kx8, made at load time from Q4_K; never in a file): rows 8g..8g+7 of a
// matrix interleaved. Group g holds, for each 256-element block column b in order, one
// BlockQ4_Kx8: the eight rows' d and dmin, their 6-bit sub-block scales and mins unpacked
// to one byte each (sub-block-major: scales[8j + r] is sub-block j of row r), and their
// quants in 32 chunks of 8 elements,
//   qs[128j + 32k + 4r + i] = (quant 32j + 8k + i) | (quant 32j + 8k + 4 + i) << 4
//                             of row 8g + r's block b   (j < 8 sub-blocks, k < 4, r < 8, i < 4).
// One 32-byte load at qs + 128j + 32k gives, in its low and in its high nibbles, four
// consecutive quants of every row in each 32-bit lane: a byte dot product against four
// activation bytes broadcast to every lane is one row's partial sum per lane, eight rows
// per instruction, and the sub-block's scales multiply all eight rows' sums at once. (The
// Q4_K row kernel spends most of its instructions unpacking scales and moving nibbles into
// place once per row; here that work is shared by eight rows and, in prefill, every token.)
// Group g starts at byte 8g * row_bytes(Q4_Kx8, cols) = 8g * 148 per block column.
struct BlockQ4_Kx8 {
  uint16_t d[8];     // f16, rows 0..7
  uint16_t dmin[8];  // f16
  uint8_t scales[64];
  uint8_t mins[64];
  uint8_t qs[1024];
};

// Q4_0x8 (DType::Q4_0x8, made at load time from Q4_0; never in a file): rows 8g..8g+7 of a
// matrix interleaved. Group g holds, for each 32-element block column b in order, one
// BlockQ4_0x8: the eight rows' scales, then their quants in four chunks of 8 elements,
//   qs[32k + 4r + i] = (quant 8k + i) | (quant 8k + 4 + i) << 4
//                      of row 8g + r's block b   (k < 4 chunks, r < 8, i < 4).
// As in Q4_Kx8, one 32-byte load at qs + 32k holds in its low and in its high nibbles four
// consecutive quants of every row per 32-bit lane: a byte dot product against four
// activation bytes broadcast to every lane is one row's partial sum per lane, eight rows per
// instruction; the eight scales convert to float in one instruction and the -8 offset is one
// vector per token. (The Q4_0 row kernel unpacks each row's 16 bytes, and reduces and scales
// each row and token on its own: prefill ran at 0.71x llama.cpp's, docs/benchmarks.md, Prefill.)
// Group g starts at byte 8g * row_bytes(Q4_0, cols): the same total size as Q4_0.
struct BlockQ4_0x8 {
  uint16_t d[8];  // f16, rows 0..7
  uint8_t qs[128];
};

// MXFP4 (OCP microscaling FP4, GGML type 39; gpt-oss experts): 32 E2M1 values sharing one
// power-of-two scale. Element j in the low nibble of qs[j], element j+16 in the high nibble
// (as Q4_0); value = kMxfp4Values[nibble] * 2^(e - 128). The table holds twice the E2M1
// values {0, .5, 1, 1.5, 2, 3, 4, 6} (sign in the nibble's top bit) so that it is integral
// and the integer kernels can dot it with int8 activations; the halving is in the scale's
// exponent (E8M0 bias 127, plus one).
struct BlockMxfp4 {
  uint8_t e;  // E8M0 exponent
  uint8_t qs[kQK / 2];
};
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
// 2^(e - 128) as a float, built from its bits (exact; e < 2 gives the subnormals 2^-128, 2^-127).
inline float mxfp4_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockMxfp4) == 17);
static_assert(sizeof(BlockQ8_0x4) == 4 * sizeof(BlockQ8_0));
static_assert(sizeof(BlockQ8_0x16) == 16 * sizeof(BlockQ8_0));
static_assert(sizeof(BlockQ4_Kx8) == 8 * 148);
static_assert(sizeof(BlockQ4_0x8) == 8 * sizeof(BlockQ4_0));
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

// Activation block for Q8_0/Q4_0 weights: x ~= qs * d; sum = sum(qs) lets the Q4_0 kernel
// fold its -8 offset into one multiply per block.
struct ActQ8 {
  float d;
  int32_t sum;
  int8_t qs[kQK];
};

// Activation super-block for K-quant weights: x ~= qs * d; bsums[k] = sum of qs[16k..16k+16)
// so the K-quant kernels apply their per-sub-block mins/offsets without touching qs again.
struct ActQ8K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block.
inline void unpack_scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace triattn::ops
