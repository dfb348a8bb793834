#include "cli/kernel_environment.h"

#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "ops/ops.h"

namespace triattn::cli {

namespace {
const char* nonempty_env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}
}  // namespace

void apply_isa_environment() {
  const char* v = nonempty_env("TRIATTN_ISA");
  if (!v) return;
  try {
    ops::select_isa(v);
  } catch (const Error& e) {
    // select_isa's message starts with the name; the user should see which variable held it.
    fail("TRIATTN_ISA=", e.what());
  }
}

std::string isa_choice() {
  return std::string(ops::isa_name(ops::active_isa())) +
         (ops::isa_selected() ? " (TRIATTN_ISA)" : " (detected: the best this CPU runs)");
}

bool repack_environment() {
  const char* v = nonempty_env("TRIATTN_REPACK");
  if (!v || std::string_view(v) == "1") return true;
  if (std::string_view(v) == "0") return false;
  fail("TRIATTN_REPACK=", v, ": expected 0 (keep the file's weight layout) or 1");
}

KernelChoiceMode kernel_choice_environment() {
  const char* v = nonempty_env("TRIATTN_KERNELS");
  KernelChoiceMode mode = KernelChoiceMode::Measure;
  if (v && std::string_view(v) == "remeasure")
    mode = KernelChoiceMode::Remeasure;
  else if (v && std::string_view(v) == "isa")
    mode = KernelChoiceMode::Isa;
  else if (v && std::string_view(v) != "measure")
    fail("TRIATTN_KERNELS=", v, ": expected measure (the default), remeasure or isa");
  return ops::isa_selected() ? KernelChoiceMode::Isa : mode;
}

}  // namespace triattn::cli
