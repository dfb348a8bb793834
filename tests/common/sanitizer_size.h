#pragma once
// The long tests run at a smaller size in sanitized builds (ASan + UBSan, TSan): the same code
// paths and checks over fewer repetitions, since every step there costs 5-15x. Chosen at
// compile time, so a sanitized build run by hand sizes itself the same way as in CI.
#include <cstddef>

namespace triattn::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(undefined_behavior_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// `full` in a plain build, `sanitized` under a sanitizer.
template <class T>
constexpr T sanitizer_size(T full, T sanitized) {
  return kSanitizedBuild ? sanitized : full;
}

}  // namespace triattn::test
