#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every test through CTest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" --test-clients
"$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure -j "${TRIATTN_JOBS:-$(nproc)}" "$@"
