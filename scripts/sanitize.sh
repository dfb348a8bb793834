#!/usr/bin/env bash
# scripts/sanitize.sh [asan|tsan|all] [ctest args...]: the test suite under sanitizers, each in
# its own build directory (docs/reliability.md).
#   asan  the whole suite (every CTest test: GoogleTest, Python references, Node clients)
#         built with -fsanitize=address,undefined into build-asan/; any report fails. The
#         build is clang-14's and also holds the libFuzzer targets (fuzz/): scripts/fuzz.sh
#         uses the same directory and configuration, so CI compiles the sanitized libraries
#         once for both (configure_asan below).
#   tsan  the test binaries of the threaded modules and what they stand on (core, model,
#         engine, server: the thread pool, batched forward, scheduler, server) built with
#         -fsanitize=thread (g++ 12) into build-tsan/, every test case through CTest.
#   asan-configure [DIR]  configures the asan build only (scripts/fuzz.sh calls it).
# Both builds compile the module libraries as unity builds (TRIATTN_UNITY_SOURCES): they test,
# they do not ship, and scripts/check_unity_names.py keeps that the same program.
# Each stage first proves that its sanitizer is live: tests/core/test_sanitizer_canary.cpp
# holds a one-past-the-end read, a signed overflow and a data race that run only when
# TRIATTN_SANITIZER_CANARY names them; the stage fails unless the sanitizer reports each.
# Environment: TRIATTN_ASAN_BUILD, TRIATTN_TSAN_BUILD (build directories), TRIATTN_JOBS.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
what="${1:-all}"
[ $# -gt 0 ] && shift
jobs="${TRIATTN_JOBS:-$(nproc)}"
. "$root/scripts/cmake_generator.sh"
launcher=()
[ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$CMAKE_CXX_COMPILER_LAUNCHER")
# exitcode=99: a sanitizer report must not look like the exit code 1 of a named error, which
# many tests expect.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:exitcode=99}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=99}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:exitcode=99:second_deadlock_stack=1}"

# timed LABEL CMD...: runs CMD and prints its wall and CPU time (docs/reliability.md, "CI time").
timed() {
  local label=$1
  shift
  local TIMEFORMAT="sanitize.sh: $label took %R s wall (%U s user, %S s system)"
  time "$@"
}
# canary BINARY CASE PATTERN: the planted bug CASE must make BINARY fail with PATTERN.
canary() {
  local bin=$1 case=$2 pattern=$3 out
  if out=$(TRIATTN_SANITIZER_CANARY=$case "$bin" --gtest_filter="SanitizerCanary.*" 2>&1); then
    echo "sanitize.sh: the planted '$case' bug was NOT caught: the sanitizer build is broken" >&2
    exit 1
  fi
  if ! grep -q "$pattern" <<<"$out"; then
    echo "sanitize.sh: the planted '$case' bug failed without a '$pattern' report:" >&2
    echo "$out" | tail -20 >&2
    exit 1
  fi
  echo "sanitize.sh: planted '$case' bug caught ($pattern)"
}

# The ASan + UBSan build, shared with the fuzz targets: clang-14 (libFuzzer), every target
# with -fsanitize=address,undefined and libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link, which costs the tests some speed and saves CI a second
# sanitized build of every library); the test suite and the fuzz targets.
configure_asan() {
  local build=$1
  "$root/scripts/setup.sh" --test-clients --fuzz
  cmake -S "$root" -B "$build" $(cmake_generator "$build") -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++-14 -DTRIATTN_SANITIZE=address,undefined -DTRIATTN_FUZZ=ON -DTRIATTN_BUILD_TESTS=ON \
    -DTRIATTN_UNITY_SOURCES=ON "${launcher[@]}" >/dev/null
}

run_asan() {
  local build="${TRIATTN_ASAN_BUILD:-$root/build-asan}"
  configure_asan "$build"
  timed "asan build" cmake --build "$build" -j "$jobs"
  canary "$build/tests/test_core" oob "AddressSanitizer: heap-buffer-overflow"
  canary "$build/tests/test_core" overflow "runtime error: signed integer overflow"
  (cd "$build" && timed "asan tests" ctest --output-on-failure -j "$jobs" "$@")
}

# The modules whose code runs on several threads, with what they stand on; none of their
# tests runs the CLI, so its modules (cli, analyze, eval: a third of the sources) are not built.
tsan_tests=(test_core test_model test_engine test_server)
# The suites that run code on several threads: the thread pools, the batched forward pass,
# the scheduler and sequences, KV compression in the engine, the server (and the canary).
tsan_suites='^(ThreadPool|ThreadPoolDynamic|SanitizerCanary|ForwardBatch|SchedulerTest|SchedulerChoicesTest|SchedulerReuseTest|SequenceContext|Logprobs|KvCompression|ServerTest|ServerChoicesTest)\.|/MemoryBound\.'
# cpp-httplib is a Debian library built without TSan: the accesses of its threads to the memory
# it hands from one to another look unsynchronised. Reports from inside it are not ours.
export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$root/scripts/tsan.supp"
run_tsan() {
  local build="${TRIATTN_TSAN_BUILD:-$root/build-tsan}"
  "$root/scripts/setup.sh"
  cmake -S "$root" -B "$build" $(cmake_generator "$build") -DCMAKE_BUILD_TYPE=Release -DTRIATTN_SANITIZE=thread \
    -DTRIATTN_UNITY_SOURCES=ON "${launcher[@]}" >/dev/null
  timed "tsan build" cmake --build "$build" -j "$jobs" --target "${tsan_tests[@]}"
  canary "$build/tests/test_core" race "ThreadSanitizer: data race"
  (cd "$build" && timed "tsan tests" ctest --output-on-failure -j "$jobs" -R "$tsan_suites" "$@")
}

case "$what" in
  asan) run_asan "$@" ;;
  asan-configure) configure_asan "${1:-${TRIATTN_ASAN_BUILD:-$root/build-asan}}" ;;
  tsan) run_tsan "$@" ;;
  all) run_asan "$@"; run_tsan "$@" ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan|all] [ctest args...] | asan-configure [DIR]" >&2; exit 2 ;;
esac
