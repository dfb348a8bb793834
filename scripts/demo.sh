#!/usr/bin/env bash
# The main job: a TriAttention-compressed generation on the bundled TinyStories-656K model
# (../shared), printing the text and its memory and speed figures. Installs dependencies,
# builds, and calibrates the model's query statistics first when they are missing.
# Extra arguments go to `triattn generate` (e.g. -n 400, --kv-budget 128, --json).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh" --target triattn >&2  # stdout is the generation only (--json parses)
bin="$root/build/triattn"
model="${TRIATTN_DEMO_MODEL:-$root/../shared/models/tinystories-656k}"
stats="$root/build/demo/$(basename "$model").stats.safetensors"
if [ ! -f "$stats" ]; then
  mkdir -p "$(dirname "$stats")"
  "$bin" calibrate -m "$model" --input "$root/tests/data/calibration_stories.txt" -o "$stats" >&2
fi
# A small budget so that a 200-token story is compressed several times: the cache is cut
# back to 64 tokens per (layer, KV head) whenever it would pass 64 + 32.
"$bin" generate -m "$model" -p "Once upon a time," -n 200 --temp 0 \
  --kv-policy triattention --stats "$stats" --kv-budget 64 --divide-length 32 --window 32 "$@"
