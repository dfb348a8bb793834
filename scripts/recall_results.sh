#!/usr/bin/env bash
# The cold tier and recall against the policy without it (docs/results.md, "Recall"):
#   - needle retrieval on bytelm-2k's needle_eval.jsonl, B = 128, 256, 512 (W 64, beta 128),
#     single-turn and with the question in a second turn after 64 generated tokens;
#   - the same on a multi-key set (10-16 passkey lines per document,
#     scripts/make_multikey_needles.py), B = 256 and 512;
#   - the long-generation regime: eval ppl and eval agree on stories260K and TinyStories-656K.
# Usage: scripts/recall_results.sh [OUT_DIR]   (NEEDLE_LIMIT=N for the first N needles only)
# Prints each table as markdown; results.json and plots stay in OUT_DIR.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${TRIATTN_SHARED_DIR:-$root/../shared}/models"
bin="$root/build/triattn"
out="${1:-$root/build/recall-results}"
limit=(); [ -n "${NEEDLE_LIMIT:-}" ] && limit=(--limit "$NEEDLE_LIMIT")
py=/usr/bin/python3; [ -x "$py" ] || py=python3
[ -x "$bin" ] || "$root/scripts/build.sh" --target triattn
mkdir -p "$out"
byte="$shared/bytelm-2k"

# Statistics as scripts/results.sh makes them (texts disjoint from the evaluation texts).
sed -n '1,1200p' "$byte/valid_sample.txt" > "$out/bytelm_calib.txt"
"$bin" calibrate -m "$byte" --input "$out/bytelm_calib.txt" --max-tokens 16384 -o "$out/byte.stats" >/dev/null 2>&1
"$bin" calibrate -m "$shared/stories260k/stories260K.bin" --input "$root/tests/data/calibration_stories.txt" -o "$out/s260.stats" >/dev/null 2>&1
"$bin" calibrate -m "$shared/tinystories-656k" --input "$root/tests/data/calibration_stories.txt" -o "$out/tiny.stats" >/dev/null 2>&1
"$py" "$root/scripts/make_multikey_needles.py" -o "$out/multikey.jsonl"

run() {  # run NAME TASK ARGS...
  local name="$1" task="$2"
  shift 2
  echo "## $name"
  echo
  "$bin" eval "$task" "$@" -q -o "$out/$name"
  echo
}
needle=(needle -m "$byte" --stats "$out/byte.stats" --window 64 --divide-length 128 --policies triattention,triattention+recall "${limit[@]}")
run needle-single "${needle[@]}" --data "$byte/needle_eval.jsonl" --budgets 128,256,512
run needle-two-turns "${needle[@]}" --data "$byte/needle_eval.jsonl" --budgets 128,256,512 --turns 2 --gen 64
run needle-multikey "${needle[@]}" --data "$out/multikey.jsonl" --budgets 256,512
for m in s260:stories260k/stories260K.bin tiny:tinystories-656k; do
  name="${m%%:*}" path="$shared/${m#*:}"
  run "$name-ppl" ppl -m "$path" --text "$root/tests/data/eval_stories.txt" --stats "$out/$name.stats" --budgets 64,128,256 \
    --window 0 --policies triattention,triattention+recall
  run "$name-agree" agree -m "$path" --prompts "$root/tests/data/agree_prompts.txt" -n 384 --stats "$out/$name.stats" \
    --budgets 64,128,256 --window 0 --policies triattention,triattention+recall
done
