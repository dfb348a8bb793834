#pragma once
// Kernels chosen by measurement when a model loads: for each weight type of its matrices,
// every kernel variant this CPU runs (ops/kernel_variants.h) is timed on a sample of the
// real matrices, and the fastest is used (for one token, and for a batch). Measurements are
// kept per machine in a small JSON file under the user's cache directory, so a machine
// measures each weight type once (per thread count and kernel revision), not at every start.
#include <string>
#include <vector>

#include "model/model.h"

namespace triattn::cli {

enum class KernelChoiceMode {
  Measure,    // use the cached measurement, time what it lacks (the default)
  Remeasure,  // time every weight type again and replace the cached figures
  Isa,        // no timing: the instruction set's default kernels, as TRIATTN_ISA also implies
};

// $XDG_CACHE_HOME/triattn/kernels.json, else $HOME/.cache/triattn/kernels.json; empty when
// neither variable is set (then nothing is cached).
std::string kernel_cache_path();

// Below this many bytes of one weight type a sample fits in the caches and its timing says
// nothing about decode: such types keep the default unless the cache holds a measurement.
constexpr size_t kMinMeasuredBytes = size_t{32} << 20;

// Chooses the kernels of every weight type of w (see above). Cache file problems (unreadable,
// malformed, unwritable) are warnings: the measurement is then made and used without it.
void choose_kernels(const ModelWeights& w, int threads, KernelChoiceMode mode, const std::string& cache_path,
                    size_t min_measured_bytes = kMinMeasuredBytes);

// What the cache file holds for this CPU and w's weight types (every thread count), one line
// each, without timing anything: for `info`, which loads no kernels.
std::vector<std::string> cached_kernel_choices(const ModelWeights& w, const std::string& cache_path);

// One line per weight type chosen in this process: "q8_0: avx2 q8_0x4, measured 2026-12-07
// (one token 1.92 ms; avx512 q8_0x16 4.41 ms, ...)".
std::vector<std::string> kernel_choice_lines();

// The CPU's name as the OS reports it ("Intel(R) Xeon(R) Processor @ 2.80GHz"), or "unknown".
std::string cpu_model_name();

}  // namespace triattn::cli
