#!/usr/bin/env bash
# aarch64 correctness (issue 16, item 5): cross-builds the ops, KV, model and format tests with
# Debian's aarch64 compiler (cmake/aarch64-linux-gnu.cmake) and runs them under qemu-user.
# No x86 flags reach that build (CMakeLists.txt adds them on x86 only), so this also guards
# every #if defined(__x86_64__) against code that only builds on x86.
#
# Every test binary of the modules below the CLI that needs no x86 and no network runs:
# core, formats, ops, kv, model (the kernels, the KV cache and policies, loading and the
# forward pass of every architecture). Under qemu-user they take ~1-17 s each.
# Usage: scripts/test_aarch64.sh [TEST_BINARY ...]   (default: the list below)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" --aarch64
build="$root/build-aarch64"
jobs="${TRIATTN_JOBS:-$(nproc)}"
tests=()
for dir in core formats ops kv model; do
  for f in "$root"/tests/$dir/test_*.cpp; do tests+=("$(basename "$f" .cpp)"); done
done
(($#)) && tests=("$@")
# Cases that run the triattn binary: not built here (it is the CLI's), and a process under
# qemu-user cannot start another aarch64 program without binfmt_misc.
declare -A SKIP=([test_maker]='MakerDefaults.MakeModelCommandWithoutType')
cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$jobs" --target "${tests[@]}"
logs="$build/qemu-logs"
mkdir -p "$logs"
run_one() {  # one line: "name ok N s" or "name FAILED (exit C) N s"
  local t="$1" start rc=0
  start=$(date +%s)
  qemu-aarch64 "$build/tests/$t" ${SKIP[$t]:+"--gtest_filter=-${SKIP[$t]}"} >"$logs/$t.log" 2>&1 || rc=$?
  if ((rc == 0)); then echo "$t ok $(($(date +%s) - start)) s"; else echo "$t FAILED (exit $rc) $(($(date +%s) - start)) s"; fi
}
: >"$logs/summary.txt"
for t in "${tests[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  run_one "$t" | tee -a "$logs/summary.txt" &
done
wait
failed=$(grep -c FAILED "$logs/summary.txt" || true)
passed=$(grep -c ' ok ' "$logs/summary.txt" || true)
for f in $(grep FAILED "$logs/summary.txt" | cut -d' ' -f1); do
  echo "=== $f (last lines of $logs/$f.log)"
  tail -30 "$logs/$f.log"
done
echo "aarch64: $passed passed, $failed failed"
((failed == 0 && passed == ${#tests[@]}))
