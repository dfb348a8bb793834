#!/usr/bin/env bash
# scripts/sanitize.sh [asan|tsan|all] [ctest args...]: the test suite under sanitizers, each in
# its own build directory (docs/reliability.md).
#   asan  the whole suite (every CTest test: GoogleTest, Python references, Node clients)
#         built with -fsanitize=address,undefined into build-asan/; any report fails.
#   tsan  the thread pool, engine (batched/parallel forward, scheduler) and server tests built
#         with -fsanitize=thread into build-tsan/, each binary run directly.
# Each stage first proves that its sanitizer is live: tests/core/test_sanitizer_canary.cpp
# holds a one-past-the-end read, a signed overflow and a data race that run only when
# TRIATTN_SANITIZER_CANARY names them; the stage fails unless the sanitizer reports each.
# Environment: TRIATTN_ASAN_BUILD, TRIATTN_TSAN_BUILD (build directories), TRIATTN_JOBS.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
what="${1:-all}"
[ $# -gt 0 ] && shift
jobs="${TRIATTN_JOBS:-$(nproc)}"
launcher=()
[ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$CMAKE_CXX_COMPILER_LAUNCHER")
# exitcode=99: a sanitizer report must not look like the exit code 1 of a named error, which
# many tests expect.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:exitcode=99}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=99}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:exitcode=99:second_deadlock_stack=1}"

stamp() { date +%s; }
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

run_asan() {
  local build="${TRIATTN_ASAN_BUILD:-$root/build-asan}" t0
  t0=$(stamp)
  "$root/scripts/setup.sh" --test-clients
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTRIATTN_SANITIZE=address,undefined "${launcher[@]}" >/dev/null
  cmake --build "$build" -j "$jobs"
  echo "sanitize.sh: asan build took $(( $(stamp) - t0 )) s"
  canary "$build/tests/test_sanitizer_canary" oob "AddressSanitizer: heap-buffer-overflow"
  canary "$build/tests/test_sanitizer_canary" overflow "runtime error: signed integer overflow"
  t0=$(stamp)
  (cd "$build" && ctest --output-on-failure -j "$jobs" "$@")
  echo "sanitize.sh: asan tests took $(( $(stamp) - t0 )) s"
}

tsan_tests=(test_thread_pool test_thread_pool_dynamic test_sanitizer_canary test_forward_batch
            test_scheduler test_scheduler_choices test_scheduler_reuse test_sequence_context test_logprobs
            test_kv_compression test_memory_bound test_server test_server_choices)
run_tsan() {
  local build="${TRIATTN_TSAN_BUILD:-$root/build-tsan}" t0 t failed=0
  t0=$(stamp)
  "$root/scripts/setup.sh"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTRIATTN_SANITIZE=thread "${launcher[@]}" >/dev/null
  cmake --build "$build" -j "$jobs" --target triattn "${tsan_tests[@]}"
  echo "sanitize.sh: tsan build took $(( $(stamp) - t0 )) s"
  canary "$build/tests/test_sanitizer_canary" race "ThreadSanitizer: data race"
  t0=$(stamp)
  for t in "${tsan_tests[@]}"; do
    if (cd "$build" && "./tests/$t" --gtest_brief=1 >"$build/$t.tsan.log" 2>&1); then
      echo "tsan $t: ok"
    else
      echo "tsan $t: FAILED"; grep -a -A30 -m1 'WARNING: ThreadSanitizer\|FAILED\|Failure' "$build/$t.tsan.log" | head -60
      failed=1
    fi
  done
  echo "sanitize.sh: tsan tests took $(( $(stamp) - t0 )) s"
  return $failed
}

case "$what" in
  asan) run_asan "$@" ;;
  tsan) run_tsan ;;
  all) run_asan "$@"; run_tsan ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan|all] [ctest args...]" >&2; exit 2 ;;
esac
