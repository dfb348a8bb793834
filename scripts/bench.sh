#!/usr/bin/env bash
# The benchmark record of docs/benchmarks.md: random-weight models of real shapes (no real
# weights of these sizes are on hand; speed does not depend on the weight values) made with
# `triattn make-model`, then `triattn bench` at growing cache depths, full attention against
# TriAttention with B = 2048.
#
# usage: scripts/bench.sh [SCRATCH_DIR]          (default /tmp/triattn-bench; never the repo)
# environment:
#   TRIATTN_BINARY  the triattn executable           (default: build/triattn beside this script)
#   MODELS          "preset:type ..." to run          (default: all six below)
#   DEPTHS          comma-separated cache depths      (default 0,4096,16384,32768)
#   REPS            repetitions per measurement       (default 3)
#   THREADS         worker threads                    (default 2)
#   BUDGET          TriAttention budget B             (default 2048)
#   LLAMA_BENCH     a llama-bench binary built from llama.cpp outside this repository (optional):
#                   run on the same file right after each of our runs (pp512, tg128)
#   LLAMA_DEPTHS    its cache depths (default 0; llama.cpp fills them by real prefill, so 16384
#                   costs minutes per repetition)
# Models: Qwen3-0.6B and Llama-3.2-1B shapes in Q8_0, Q4_K_M and F16 (make-model --type q4_k_m
# writes llama.cpp's Q4_K/Q6_K mix).
# Results: SCRATCH_DIR/results/<preset>-<type>.json (bench --json), .log (progress), and
# SCRATCH_DIR/results/tables.md (the tables docs/benchmarks.md is written from).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-/tmp/triattn-bench}"
case "$(realpath -m "$dir")/" in
  "$here"/*) echo "bench.sh: the scratch dir must be outside the repository ($here)" >&2; exit 2 ;;
esac
bin="${TRIATTN_BINARY:-$here/build/triattn}"
models="${MODELS:-qwen3-0.6b:q8_0 qwen3-0.6b:q4_k_m qwen3-0.6b:f16 llama-3.2-1b:q8_0 llama-3.2-1b:q4_k_m llama-3.2-1b:f16}"
depths="${DEPTHS:-0,4096,16384,32768}"
reps="${REPS:-3}"
threads="${THREADS:-2}"
budget="${BUDGET:-2048}"
llama="${LLAMA_BENCH:-}"
llama_depths="${LLAMA_DEPTHS:-0}"
if [ -n "$llama" ]; then
  [ -x "$llama" ] || { echo "bench.sh: LLAMA_BENCH=$llama is not executable" >&2; exit 2; }
  case "$(realpath -m "$llama")/" in
    "$here"/*) echo "bench.sh: LLAMA_BENCH must be built outside the repository ($here)" >&2; exit 2 ;;
  esac
fi
[ -x "$bin" ] || { echo "bench.sh: $bin is not executable (build it, or set TRIATTN_BINARY)" >&2; exit 2; }
mkdir -p "$dir/models" "$dir/results"

echo "bench.sh: commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%dT%H:%MZ)" \
  | tee "$dir/results/run-info.txt"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)' | tee -a "$dir/results/run-info.txt"

for m in $models; do
  preset="${m%%:*}"
  type="${m##*:}"
  gguf="$dir/models/$preset-$type.gguf"
  if [ ! -s "$gguf" ]; then
    echo "== making $gguf"
    "$bin" make-model --preset "$preset" --type "$type" -o "$gguf"
  fi
  out="$dir/results/$preset-$type"
  echo "== bench $preset $type (reps $reps, depths $depths)"
  # Each command as run, for the record.
  cmd=("$bin" bench -m "$gguf" -t "$threads" --depths "$depths" --policies full,triattention
       --kv-budget "$budget" --kv-type f16 --reps "$reps" --json)
  echo "${cmd[*]}" > "$out.cmd"
  "${cmd[@]}" > "$out.json.tmp" 2> "$out.log"
  mv "$out.json.tmp" "$out.json"
  if [ -n "$llama" ]; then  # the same file through llama.cpp, right after ours
    echo "== llama-bench $preset $type (reps $reps, depths $llama_depths)"
    lcmd=("$llama" -m "$gguf" -t "$threads" -p 512 -n 128 -d "$llama_depths" -r "$reps" -o json)
    echo "${lcmd[*]}" > "$out.llama.cmd"
    "${lcmd[@]}" > "$out.llama.tmp" 2>> "$out.log"
    mv "$out.llama.tmp" "$out.llama"
  fi
done

# Tables (markdown), with the targets (docs/benchmarks.md) computed from the same figures.
/usr/bin/python3 - "$dir/results" > "$dir/results/tables.md" <<'PY'
import json, os, sys
d = sys.argv[1]
for name in sorted(f for f in os.listdir(d) if f.endswith(".json")):
    j = json.load(open(os.path.join(d, name)))
    llama = os.path.join(d, name[:-5] + ".llama")  # llama-bench -o json on the same file, if run
    m, s = j["machine"], j["settings"]
    W = j["model"]["weight_bytes"]
    print(f"### {name[:-5]}  ({j['model']['weight_type']}, weights {W/2**20:.0f} MiB)\n")
    print(f"{m['threads']} threads, probe {m['bandwidth_gbs']:.1f} GB/s, KV {s['kv_type']}, B={s['kv_budget']}, "
          f"beta={s['divide_length']}, reps {s['reps']}, calibration: {s['calibration']}\n")
    print("| policy | depth | pp512 tok/s | GFLOP/s | tg128 tok/s (sd) | KV peak MiB | KV read/tok MiB | scoring % | GB/s | % of probe |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    runs = {(r["policy"], r["depth"]): r for r in j["runs"]}
    for r in j["runs"]:
        print(f"| {r['policy']} | {r['depth']} | {r['pp_tok_s']:.1f} | {r['gflops']:.1f} | "
              f"{r['tg_tok_s']:.2f} ({r['tg_tok_s_sd']:.2f}) | {r['kv_peak_bytes']/2**20:.1f} | "
              f"{r['kv_bytes_per_token']/2**20:.1f} | {100*r['scoring_share']:.2f} | {r['bandwidth_gbs']:.2f} | "
              f"{100*r['bandwidth_share']:.0f} |")
    print()
    depths = sorted({r["depth"] for r in j["runs"]})
    rows = []
    for dep in depths:
        f, t = runs.get(("full", dep)), runs.get(("triattention", dep))
        if not f or not t or dep == 0:
            continue
        # Predicted speed-up (W + KV(depth)) / (W + KV(B+beta)): KV bytes per token scale with rows.
        per_row = f["kv_peak_bytes"] / f["kv_peak_tokens"]
        kv_full = dep * per_row
        kv_tri = min(dep, s["kv_budget"] + s["divide_length"]) * per_row
        pred = (W + kv_full) / (W + kv_tri)
        got = t["tg_tok_s"] / f["tg_tok_s"] if f["tg_tok_s"] else 0
        peak_ratio = t["kv_peak_bytes"] / f["kv_peak_bytes"]
        bound = (s["kv_budget"] + s["divide_length"]) / dep
        rows.append(f"| {dep} | {got:.2f}x | {pred:.2f}x | {100*got/pred:.0f}% | {peak_ratio:.3f} | {bound:.3f} | "
                    f"{100*t['scoring_share']:.2f}% |")
    if rows:
        print("| depth | measured speed-up | predicted | achieved | KV peak tri/full | (B+beta)/depth | scoring share |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        print("\n".join(rows))
        print()
    if os.path.exists(llama):
        print("llama.cpp on the same file (llama-bench, full attention, its own KV type f16):\n")
        print("| test | depth | llama.cpp tok/s (sd) | triattn full tok/s | triattn / llama.cpp |")
        print("|---|---:|---:|---:|---:|")
        for r in json.load(open(llama)):
            pp = r["n_prompt"] > 0
            ours = runs.get(("full", r["n_depth"]))
            mine = (ours["pp_tok_s"] if pp else ours["tg_tok_s"]) if ours and (not pp or r["n_depth"] == 0) else None
            test = f"pp{r['n_prompt']}" if pp else f"tg{r['n_gen']}"
            ratio = f"{mine / r['avg_ts']:.2f}x" if mine else ""
            print(f"| {test} | {r['n_depth']} | {r['avg_ts']:.1f} ({r['stddev_ts']:.1f}) | "
                  f"{'' if mine is None else f'{mine:.1f}'} | {ratio} |")
        print()
PY
cat "$dir/results/tables.md"
