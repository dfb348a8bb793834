#include "ops/cpu_dispatch.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "ops/cpu_features.h"

namespace triattn::ops {

namespace {

const KernelTable* table_for(Isa isa) {
  switch (isa) {
    case Isa::Scalar:
      return &scalar_kernels();
#if defined(__x86_64__)
    case Isa::Avx2:
      return cpu_features().avx2_fma_f16c ? &avx2_kernels() : nullptr;
    case Isa::Avx512:
      return cpu_features().avx512_vnni ? &avx512_kernels() : nullptr;
#else
    case Isa::Avx2:
    case Isa::Avx512:
      return nullptr;
#endif
#if defined(__aarch64__)
    case Isa::Neon:
      return cpu_features().neon ? &neon_kernels() : nullptr;
    case Isa::NeonDotprod:
      return cpu_features().neon_dotprod ? &neon_dotprod_kernels() : nullptr;
#else
    case Isa::Neon:
    case Isa::NeonDotprod:
      return nullptr;
#endif
  }
  return nullptr;
}

// The best table for this CPU (supported_isas is ordered worst to best).
const KernelTable* best_table() { return table_for(supported_isas().back()); }

const KernelTable* g_active = nullptr;
bool g_selected = false;

}  // namespace

ActFormat act_format(DType weight_type) {
  switch (weight_type) {
    case DType::Q8_0:
    case DType::Q8_0x4:
    case DType::Q8_0x16:
    case DType::Q4_0:
    case DType::Q4_0x8:
    case DType::MXFP4:
      return ActFormat::Q8;
    case DType::Q4_K:
    case DType::Q4_Kx8:
    case DType::Q5_K:
    case DType::Q6_K:
      return ActFormat::Q8K;
    default:
      return ActFormat::F32;
  }
}

const KernelTable& active_kernels() {
  // Static init is thread-safe; select_isa and set_isa_for_testing replace the pointer before
  // kernels run (or, in tests, between them).
  static const KernelTable* best = best_table();
  return g_active ? *g_active : *best;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar:
      return "scalar";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
    case Isa::Neon:
      return "neon";
    case Isa::NeonDotprod:
      return "neon_dotprod";
  }
  return "?";
}

Isa active_isa() { return active_kernels().isa; }

std::vector<Isa> supported_isas() {
  std::vector<Isa> out{Isa::Scalar};
  for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Neon, Isa::NeonDotprod})
    if (table_for(isa)) out.push_back(isa);
  return out;
}

void select_isa(std::string_view name) {
  std::string names;
  for (Isa isa : supported_isas()) {
    if (isa_name(isa) == name) {
      g_active = table_for(isa);
      g_selected = true;
      return;
    }
    names += (names.empty() ? "" : ", ") + std::string(isa_name(isa));
  }
  fail(name, ": not an instruction set this CPU runs (supported: ", names, ")");
}

bool isa_selected() { return g_selected; }

void set_isa_for_testing(Isa isa) {
  const KernelTable* t = table_for(isa);
  if (!t) fail("set_isa_for_testing: this CPU cannot run the ", isa_name(isa), " kernels");
  g_active = t;
}

}  // namespace triattn::ops
