#!/usr/bin/env bash
# Configures and builds triattn (Release) into build/. Extra args go to cmake --build.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
. "$root/scripts/cmake_generator.sh"
jobs="${TRIATTN_JOBS:-$(nproc)}"
cmake -S "$root" -B "$root/build" $(cmake_generator "$root/build") -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$jobs" "$@"
