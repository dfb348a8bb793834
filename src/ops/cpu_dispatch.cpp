#include "ops/cpu_dispatch.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/cpu_features.h"
#include "ops/kernel_variants.h"

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
// The table measured choices make: a copy of the active one with their entries replaced.
KernelTable g_chosen;
bool g_chosen_on = false;
Isa g_decode_isa[kNumDTypes], g_batch_isa[kNumDTypes];  // whose kernels g_chosen holds, by layout

const KernelTable& base_table() {
  static const KernelTable* best = best_table();
  return g_active ? *g_active : *best;
}

// The layouts a file type can be stored in, itself first.
std::vector<DType> layouts_of(DType type) {
  switch (type) {
    case DType::Q8_0:
      return {DType::Q8_0, DType::Q8_0x4, DType::Q8_0x16};
    case DType::Q4_K:
      return {DType::Q4_K, DType::Q4_Kx8};
    case DType::Q4_0:
      return {DType::Q4_0, DType::Q4_0x8};
    default:
      return {type};
  }
}

bool fits(DType layout, int64_t rows, int64_t cols) {
  return rows % interleaved_rows(layout) == 0 && cols % block_size(layout) == 0;
}

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
  // Static init is thread-safe; select_isa, set_isa_for_testing and use_kernel_variant replace
  // the table before kernels run (or, in tests, between them).
  return g_chosen_on ? g_chosen : base_table();
}

std::string variant_name(const KernelVariant& v) {
  return std::string(isa_name(v.isa)) + " " + std::string(dtype_name(v.layout));
}

std::vector<KernelVariant> kernel_variants(DType type, int64_t rows, int64_t cols) {
  std::vector<KernelVariant> out{current_variant(type, rows, cols)};
  std::vector<Isa> isas = supported_isas();
  if (isas.size() > 1) isas.erase(isas.begin());  // scalar only where nothing else runs
  for (Isa isa : isas)
    for (DType layout : layouts_of(type)) {
      const KernelVariant v{isa, layout};
      if (table_for(isa)->matmul[static_cast<int>(layout)] && fits(layout, rows, cols) &&
          std::find(out.begin(), out.end(), v) == out.end())
        out.push_back(v);
    }
  return out;
}

KernelVariant current_variant(DType type, int64_t rows, int64_t cols) {
  const TensorView probe{type, {rows, cols}, reinterpret_cast<const void*>(1)};
  const DType layout = interleaved_type(probe).value_or(type);
  const KernelTable& t = active_kernels();
  if (g_chosen_on && t.layout[static_cast<int>(type)] == layout) return {g_decode_isa[static_cast<int>(layout)], layout};
  return {t.matmul[static_cast<int>(layout)] ? t.isa : Isa::Scalar, layout};
}

Isa current_batch_isa(DType type, int64_t rows, int64_t cols) {
  const KernelVariant v = current_variant(type, rows, cols);
  const KernelTable& t = active_kernels();
  if (g_chosen_on && t.layout[static_cast<int>(type)] == v.layout) return g_batch_isa[static_cast<int>(v.layout)];
  return v.isa;
}

void use_kernel_variant(DType type, const KernelVariant& decode, Isa batch_isa) {
  const KernelTable* d = table_for(decode.isa);
  const KernelTable* b = table_for(batch_isa);
  const int l = static_cast<int>(decode.layout);
  if (!d || !b) fail("use_kernel_variant: this CPU cannot run the ", isa_name(d ? batch_isa : decode.isa), " kernels");
  if (!d->matmul[l] || !b->matmul[l])
    fail("use_kernel_variant: no ", isa_name(d->matmul[l] ? batch_isa : decode.isa), " kernel for ",
         dtype_name(decode.layout));
  const std::vector<DType> layouts = layouts_of(type);
  if (std::find(layouts.begin(), layouts.end(), decode.layout) == layouts.end())
    fail("use_kernel_variant: ", dtype_name(type), " weights cannot be stored as ", dtype_name(decode.layout));
  if (!g_chosen_on) {
    g_chosen = base_table();
    g_chosen_on = true;
  }
  g_chosen.layout[static_cast<int>(type)] = decode.layout;
  g_chosen.matmul[l] = d->matmul[l];
  g_chosen.matmul_batch[l] = batch_isa == decode.isa ? nullptr : b->matmul[l];
  g_decode_isa[l] = decode.isa;
  g_batch_isa[l] = batch_isa;
}

void reset_kernel_variants() { g_chosen_on = false; }

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
      g_chosen_on = false;
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
  g_selected = false;  // a test's forcing is not the program's selection
  g_chosen_on = false;
}

}  // namespace triattn::ops
