// The avx512 kernel table. AVX-512 F/BW/VL/DQ/VNNI on 256-bit vectors: 32 registers allow
// a 4 x 4 tile, and vpdpbusd does the byte dot products in one instruction. (Decode is
// memory-bound, so 512-bit vectors would buy little there.)
#if defined(__x86_64__)
#define TRIATTN_X86_VNNI 1
#define TRIATTN_TILE_ROWS 4
#define TRIATTN_TILE_TOKENS 4
#define TRIATTN_TILE_GROUPS_X4 2
#define TRIATTN_SMALL_BATCH 16
#include "ops/x86_matmul.inl"
#include "ops/mxfp4_x86.inl"
#include "ops/x86_vec.inl"
#include "ops/attention.h"
#include "ops/score_kernels.h"

namespace triattn::ops {

const KernelTable& avx512_kernels() {
  static const KernelTable t = [] {
    KernelTable k;
    k.isa = Isa::Avx512;
    fill_matmul(k);
    fill_mxfp4(k);
    fill_vec(k);
    // Head dims that are not whole 512-bit vectors keep the 256-bit attention kernel; scoring
    // has no 512-bit kernel of its own (it runs once per pruning event).
    k.attend[0] = {::triattn::attention_detail::attend_avx512, 16};
    k.attend[1] = {::triattn::attention_detail::attend_avx2, 8};
    k.score_keys = {::triattn::detail::score_keys_avx2, 8};
    return k;
  }();
  return t;
}

}  // namespace triattn::ops
#endif
