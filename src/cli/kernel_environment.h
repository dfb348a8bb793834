#pragma once
// The kernel and weight-loading switches, read from the environment here and nowhere else
// (library code never reads the environment): the library takes them as ops::select_isa and
// LoadOptions::repack.
//   TRIATTN_ISA     scalar, avx2, avx512, neon or neon_dotprod: the kernels' instruction set in
//                   place of the best one detected (one this CPU lacks is an error)
//   TRIATTN_REPACK  0 keeps the weights in the file's mapping and layout; 1 (the default) repacks
//   TRIATTN_KERNELS measure (the default): each weight type's kernels chosen by timing them,
//                   remembered per machine (cli/kernel_choice.h); remeasure: time them again;
//                   isa: the instruction set's default kernels, no timing (so does TRIATTN_ISA)
#include <string>

#include "cli/kernel_choice.h"

namespace triattn::cli {

// Applies TRIATTN_ISA (unset or empty: the detected best stays). Raises Error naming the variable
// and the instruction sets this CPU runs when it names another. main calls it before any command.
void apply_isa_environment();
// "avx512 (detected: the best this CPU runs)" or "avx2 (TRIATTN_ISA)": the kernels in use and why.
std::string isa_choice();
// Whether loading repacks, from TRIATTN_REPACK (unset or empty: yes); Error for a value other than 0 or 1.
bool repack_environment();
// TRIATTN_KERNELS (unset or empty: measure; Isa whenever TRIATTN_ISA chose the instruction
// set); Error naming the variable for another value.
KernelChoiceMode kernel_choice_environment();

}  // namespace triattn::cli
