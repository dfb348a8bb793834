#!/usr/bin/env bash
# aarch64 correctness: cross-builds the test binaries of the modules below the engine (core,
# formats, ops, kv, model: the kernels, the KV cache and policies, loading and the forward pass
# of every architecture) with Debian's aarch64 compiler (cmake/aarch64-linux-gnu.cmake) and
# runs them under qemu-user, each binary in shards (GoogleTest's sharding) two at a time.
# No x86 flags reach that build (CMakeLists.txt adds them on x86 only), so this also guards
# every #if defined(__x86_64__) against code that only builds on x86. The libraries are unity
# builds (TRIATTN_UNITY_SOURCES), as in the sanitizer stages.
# Usage: scripts/test_aarch64.sh [TEST_BINARY ...]   (default: the list below)
# Environment: TRIATTN_JOBS (parallel builds and qemu processes), TRIATTN_AARCH64_SHARDS
# (shards per binary, default 4).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" --aarch64
. "$root/scripts/cmake_generator.sh"
build="$root/build-aarch64"
jobs="${TRIATTN_JOBS:-$(nproc)}"
shards="${TRIATTN_AARCH64_SHARDS:-4}"
tests=(test_core test_formats test_ops test_kv test_model)
(($#)) && tests=("$@")
cmake -S "$root" -B "$build" $(cmake_generator "$build") -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DTRIATTN_UNITY_SOURCES=ON >/dev/null
cmake --build "$build" -j "$jobs" --target "${tests[@]}"
logs="$build/qemu-logs"
rm -rf "$logs"
mkdir -p "$logs"
run_one() {  # one line: "name/shard ok N s" or "name/shard FAILED (exit C) N s"
  local t="$1" i="$2" start rc=0
  start=$(date +%s)
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i qemu-aarch64 "$build/tests/$t" >"$logs/$t.$i.log" 2>&1 || rc=$?
  if ((rc == 0)); then echo "$t/$i ok $(($(date +%s) - start)) s"; else echo "$t/$i FAILED (exit $rc) $(($(date +%s) - start)) s"; fi
}
: >"$logs/summary.txt"
for t in "${tests[@]}"; do
  for ((i = 0; i < shards; ++i)); do
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
    run_one "$t" "$i" | tee -a "$logs/summary.txt" &
  done
done
wait
failed=$(grep -c FAILED "$logs/summary.txt" || true)
passed=$(grep -c ' ok ' "$logs/summary.txt" || true)
for f in $(grep FAILED "$logs/summary.txt" | cut -d' ' -f1); do
  echo "=== $f (last lines of $logs/${f/\//.}.log)"
  tail -30 "$logs/${f/\//.}.log"
done
cases=$(cat "$logs"/*.log | grep -c '^\[       OK \]' || true)
echo "aarch64: $passed shards passed, $failed failed ($cases test cases)"
((failed == 0 && passed == ${#tests[@]} * shards))
