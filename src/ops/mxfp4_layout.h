#pragma once
// gpt-oss's MXFP4 experts as Hugging Face checkpoints store them, and as GGML does.
// HF (transformers' Mxfp4 integration, the original checkpoints): per weight row of `cols`
// inputs, `blocks` holds cols/32 groups of 16 bytes and `scales` cols/32 bytes; byte j of a
// group packs element 2j (low nibble) and 2j+1 (high nibble), and the value is
// E2M1(nibble) * 2^(scale - 127). GGML (ops/quant_blocks.h BlockMxfp4) packs elements j and
// j+16 into byte j and keeps the scale in the block. The nibble codes and the exponent byte
// mean the same in both, so a conversion only moves nibbles.
#include <cstdint>

#include "ops/quant_blocks.h"

namespace triattn::ops {

// n blocks of 32 elements: HF's `blocks` (16 n bytes) and `scales` (n bytes) -> GGML blocks.
void mxfp4_from_hf(const uint8_t* blocks, const uint8_t* scales, int64_t n, BlockMxfp4* out);
// The inverse (the model maker writes HF checkpoints as gpt-oss ships them).
void mxfp4_to_hf(const BlockMxfp4* in, int64_t n, uint8_t* blocks, uint8_t* scales);

}  // namespace triattn::ops
