#!/usr/bin/env bash
# scripts/fuzz.sh [TARGET|all|list|replay] [SECONDS]: builds the libFuzzer targets (fuzz/,
# clang-14, ASan + UBSan, in the build directory of the ASan suite: scripts/sanitize.sh
# asan-configure) and runs TARGET (default: all, one after another) for SECONDS each
# (default 60; with TRIATTN_FUZZ_RUNS, SECONDS given is a cap too) from its seed corpus (fuzz/seeds.sh: ../shared files, fuzz_make_seeds output,
# hand-written inputs) with its dictionary. The corpus grows in $BUILD/corpus/TARGET across
# runs. Every run appends "date target seconds executions result" to $BUILD/fuzz-runs.log.
# A crash, leak or timeout leaves its input in $BUILD/artifacts/TARGET/ and fails the script:
# copy it to tests/data/fuzz_regressions/TARGET/ (replayed by tests/server/test_fuzz_replay.cpp
# and by `scripts/fuzz.sh replay`), fix the code, rerun.
#   list     print the targets
#   replay   run every target once over its regression inputs and seeds (no fuzzing)
# Environment: TRIATTN_FUZZ_BUILD (build directory, default TRIATTN_ASAN_BUILD or build-asan/),
# TRIATTN_FUZZ_RUNS (stop after this many executions instead of SECONDS; a "1,000,000
# executions or one hour" run is TRIATTN_FUZZ_RUNS=1000000 scripts/fuzz.sh TARGET 3600),
# TRIATTN_FUZZ_NO_BUILD=1 (run the targets already built, e.g. while another run of this
# script uses the build directory), TRIATTN_JOBS (build parallelism), TRIATTN_FUZZ_ARGS (more
# libFuzzer flags).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TRIATTN_FUZZ_BUILD:-${TRIATTN_ASAN_BUILD:-$root/build-asan}}"
what="${1:-all}"
secs="${2:-60}"
secs_given=$(( $# >= 2 ))
targets=(fuzz_gguf fuzz_gguf_model fuzz_gguf_vocab fuzz_safetensors fuzz_hf_checkpoint fuzz_llama2c
         fuzz_llama2c_vocab fuzz_stats_safetensors fuzz_stats_pt fuzz_stats_tria fuzz_stats_npz fuzz_pickle fuzz_zip
         fuzz_tokenizer_json fuzz_vocab_merges fuzz_tiktoken fuzz_tokenize fuzz_jinja fuzz_grammar fuzz_completion_request fuzz_http_request)
if [ "$what" = list ]; then printf '%s\n' "${targets[@]}"; exit 0; fi
run=("${targets[@]}")
case "$what" in
  all|replay) ;;
  *) printf '%s\n' "${targets[@]}" | grep -qx "$what" || { echo "fuzz.sh: unknown target '$what' (scripts/fuzz.sh list)" >&2; exit 2; }
     run=("$what") ;;
esac

if [ "${TRIATTN_FUZZ_NO_BUILD:-0}" != 1 ]; then
  "$root/scripts/sanitize.sh" asan-configure "$build"
  jobs="${TRIATTN_JOBS:-$(nproc)}"
  t0=$(date +%s)
  cmake --build "$build" -j "$jobs" --target fuzz_make_seeds "${run[@]}" >/dev/null
  echo "fuzz.sh: build took $(( $(date +%s) - t0 )) s"
fi
seeds="$build/seeds"
[ -f "$seeds/tiny-llama.stats.safetensors" ] || "$build/fuzz/fuzz_make_seeds" "$seeds"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# fuzz_one TARGET: replays or runs one target; non-zero when it found something.
fuzz_one() {
  local t=$1 corpus art regress dict max_len common inputs limit extra_dirs log start result execs line
  corpus="$build/corpus/$t" art="$build/artifacts/$t"
  mkdir -p "$corpus" "$art"
  "$root/fuzz/seeds.sh" "$t" "$corpus" "$seeds"
  regress="$root/tests/data/fuzz_regressions/$t"
  dict=()
  [ -f "$root/fuzz/$t.dict" ] && dict=(-dict="$root/fuzz/$t.dict")
  # -timeout: one input may take 30 s at most (hangs are findings; the slowest legitimate
  # input, a template that uses up the whole render step budget, takes ~1.5 s under ASan on an
  # idle core and several times that on a loaded one); -rss_limit_mb and
  # -malloc_limit_mb: an input may not make the loaders take more than 2 GiB.
  # -max_len: inputs stay small enough to run fast (the big real files are cut to their
  # structural part; the small generated seeds are whole).
  case "$t" in
    fuzz_tokenize|fuzz_completion_request|fuzz_pickle|fuzz_http_request) max_len=16384 ;;
    fuzz_gguf_model|fuzz_hf_checkpoint|fuzz_llama2c|fuzz_gguf_vocab) max_len=131072 ;;
    *) max_len=65536 ;;
  esac
  common=(-timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=$max_len -artifact_prefix="$art/")
  if [ "$what" = replay ]; then
    inputs=("$corpus"/seed-*)
    [ -d "$regress" ] && inputs+=("$regress"/*)
    if "$build/fuzz/$t" "${common[@]}" "${inputs[@]}" >"$art/replay.log" 2>&1; then
      echo "replay $t: ${#inputs[@]} inputs ok"
    else
      echo "replay $t: FAILED (see $art/replay.log)"; tail -30 "$art/replay.log"; return 1
    fi
    return 0
  fi
  limit=(-max_total_time="$secs")
  if [ -n "${TRIATTN_FUZZ_RUNS:-}" ]; then
    limit=(-runs="$TRIATTN_FUZZ_RUNS")
    ((secs_given)) && limit+=(-max_total_time="$secs")
  fi
  extra_dirs=()
  [ -d "$regress" ] && extra_dirs=("$regress")
  log="$art/run-$(date -u +%Y%m%dT%H%M%S).log"
  start=$(date +%s)
  # shellcheck disable=SC2086
  if "$build/fuzz/$t" "${common[@]}" "${limit[@]}" "${dict[@]}" -print_final_stats=1 \
       ${TRIATTN_FUZZ_ARGS:-} "$corpus" "${extra_dirs[@]}" >"$log" 2>&1; then
    result=ok
  else
    result="FAILED"
  fi
  execs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
  line="$(date -u +%FT%TZ) $t seconds=$(( $(date +%s) - start )) executions=${execs:-?} result=$result"
  echo "$line" | tee -a "$build/fuzz-runs.log"
  if [ "$result" != ok ]; then
    grep -a -E 'ERROR|SUMMARY|==[0-9]+==|Test unit written|fuzz:|runtime error' "$log" | head -20
    echo "fuzz.sh: $t found a problem; log $log, input(s) in $art/" >&2
    return 1
  fi
}

# The targets run side by side, TRIATTN_JOBS at a time (each is one single-threaded process).
jobs="${TRIATTN_JOBS:-$(nproc)}"
status=0
pids=()
for t in "${run[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || status=1; done
  fuzz_one "$t" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
