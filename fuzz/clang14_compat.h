// Forced into src/ops in the clang builds only (fuzz/CMakeLists.txt: the fuzz targets and the
// ASan + UBSan suite share that build): clang 14's __builtin_cpu_supports does not know
// "f16c" (a hard error). Here the features src/ops/cpu_features.cpp asks for are read from
// CPUID instead (and XGETBV: the OS must save the AVX / AVX-512 registers), so the SIMD
// kernels run, and are checked by ASan, where the CPU has them, as in the g++ builds.
#pragma once
#if defined(__clang__) && __clang_major__ < 15 && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>

#include <cstring>

static inline bool triattn_clang14_cpu_supports(const char* feature) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned ecx1 = c;
  const bool osxsave = (ecx1 >> 27) & 1;
  unsigned lo = 0, hi = 0;
  if (osxsave) __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const bool os_avx = osxsave && (lo & 0x6) == 0x6;         // XMM and YMM state
  const bool os_avx512 = os_avx && (lo & 0xe0) == 0xe0;     // opmask, ZMM0-15 high, ZMM16-31
  unsigned ebx7 = 0, ecx7 = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) ebx7 = b, ecx7 = c;
  const char* f = feature;
  if (!std::strcmp(f, "fma")) return os_avx && ((ecx1 >> 12) & 1);
  if (!std::strcmp(f, "f16c")) return os_avx && ((ecx1 >> 29) & 1);
  if (!std::strcmp(f, "avx2")) return os_avx && ((ebx7 >> 5) & 1);
  if (!std::strcmp(f, "avx512f")) return os_avx512 && ((ebx7 >> 16) & 1);
  if (!std::strcmp(f, "avx512dq")) return os_avx512 && ((ebx7 >> 17) & 1);
  if (!std::strcmp(f, "avx512bw")) return os_avx512 && ((ebx7 >> 30) & 1);
  if (!std::strcmp(f, "avx512vl")) return os_avx512 && ((ebx7 >> 31) & 1);
  if (!std::strcmp(f, "avx512vnni")) return os_avx512 && ((ecx7 >> 11) & 1);
  return false;  // a feature not listed here reads as absent: the scalar kernels run
}
#define __builtin_cpu_supports(feature) triattn_clang14_cpu_supports(feature)
#endif
