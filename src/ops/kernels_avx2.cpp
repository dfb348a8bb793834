// The avx2 kernel table. AVX2 + FMA + F16C: 16 vector registers, so a 4 rows x 2 tokens tile (8
// accumulators).
#if defined(__x86_64__)
#define TRIATTN_X86_VNNI 0
#define TRIATTN_TILE_ROWS 4
#define TRIATTN_TILE_TOKENS 2
#define TRIATTN_TILE_GROUPS_X4 2
#define TRIATTN_SMALL_BATCH 16
#include "ops/x86_matmul.inl"
#include "ops/mxfp4_x86.inl"
#include "ops/x86_vec.inl"
#include "ops/attention.h"
#include "ops/score_kernels.h"

namespace triattn::ops {

const KernelTable& avx2_kernels() {
  static const KernelTable t = [] {
    KernelTable k;
    k.isa = Isa::Avx2;
    fill_matmul(k);
    fill_mxfp4(k);
    fill_vec(k);
    k.attend[0] = {::triattn::attention_detail::attend_avx2, 8};
    k.score_keys = {::triattn::detail::score_keys_avx2, 8};
    return k;
  }();
  return t;
}

}  // namespace triattn::ops
#endif
