#!/usr/bin/env bash
# The main job: a generation on the bundled TinyStories-656K model (../shared), printing the
# text and its memory and speed figures. Installs dependencies and builds as needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh" --target triattn
model="${TRIATTN_DEMO_MODEL:-$root/../shared/models/tinystories-656k}"
"$root/build/triattn" generate -m "$model" -p "Once upon a time," -n 200 "$@"
