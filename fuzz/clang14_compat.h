// Forced into src/ops in the fuzz build only (fuzz/CMakeLists.txt): clang 14's
// __builtin_cpu_supports does not know "f16c" (a hard error), so there every feature reads
// as absent and the scalar kernels run. The fuzz targets test parsers, not kernels.
#pragma once
#if defined(__clang__) && __clang_major__ < 15
static inline int triattn_fuzz_no_cpu_feature(const char*) { return 0; }
#define __builtin_cpu_supports(feature) triattn_fuzz_no_cpu_feature(feature)
#endif
