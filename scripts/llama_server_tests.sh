#!/usr/bin/env bash
# Runs llama.cpp's own server tests for the Anthropic Messages API and the tool-call surface
# (tools/server/tests/unit/test_compat_anthropic.py, test_tool_call.py; the fast set, as its
# CI runs them) against llama-server and against `triattn serve`, with the same small model
# (stories260K converted by llama.cpp's own converter), and lists every test that passes
# against llama-server but not against triattn. Exit status 1 when there is one.
#
#   scripts/llama_server_tests.sh LLAMA_SRC LLAMA_BUILD_BIN [OUT]
#
# LLAMA_SRC: a llama.cpp checkout (built outside this repository); LLAMA_BUILD_BIN: its
# bin/ folder with llama-server and llama-convert-llama2c-to-ggml. Needs Debian's
# python3-pytest, python3-requests and python3-wget. Offline: tests that download (the
# vision ones) fail against both.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
src="$(cd "$1" && pwd)"
bin="$(cd "$2" && pwd)"
out="${3:-/tmp/llama_server_tests}"
shared="${TRIATTN_SHARED_DIR:-$here/../shared}"
triattn="${TRIATTN_BIN:-$here/build/triattn}"
py=/usr/bin/python3
mkdir -p "$out"
for m in pytest requests wget; do
  $py -c "import $m" 2>/dev/null || { echo "needs python3-$m (apt-get install python3-$m)" >&2; exit 2; }
done

model="$out/stories260K.gguf"
if [ ! -f "$model" ]; then
  "$bin/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "$shared/models/stories260k/tok512.bin" \
    --llama2c-model "$shared/models/stories260k/stories260K.bin" --llama2c-output-model "$model" \
    > "$out/convert.log" 2>&1
  # The converter writes a 128-token context, too short for the tool-call prompts; the
  # suites' own copy of this model has more. The same file serves both servers.
  PYTHONPATH="$src/gguf-py" $py "$src/gguf-py/gguf/scripts/gguf_set_metadata.py" --force "$model" \
    llama.context_length 2048 >> "$out/convert.log" 2>&1
fi

files=(unit/test_compat_anthropic.py unit/test_tool_call.py)
for kind in llama triattn; do
  if [ "$kind" = llama ]; then target="$bin/llama-server"; else target="$triattn"; fi
  echo "== $kind: ${files[*]}" >&2
  (cd "$src/tools/server/tests" &&
    SHIM_KIND=$kind SHIM_BIN="$target" SHIM_MODEL="$model" \
    LLAMA_SERVER_BIN_PATH="$here/scripts/llama_server_shim.py" \
    PYTHONPATH="$here/scripts:$src/tools/server/tests" \
    $py -m pytest -q -p no:cacheprovider -p llama_server_offline -m "not slow" --junitxml="$out/$kind.xml" "${files[@]}" \
      > "$out/$kind.log" 2>&1) || true
  tail -1 "$out/$kind.log" >&2
done

$py - "$out/llama.xml" "$out/triattn.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ET

def outcomes(path):
    res = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("classname").split(".")[-1] + "::" + case.get("name")
        bad = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
        res[name] = bad[0] if bad else "passed"
    return res

llama, ours = outcomes(sys.argv[1]), outcomes(sys.argv[2])
print(f"{'test':<72} {'llama-server':>12} {'triattn':>8}")
for name in sorted(llama):
    print(f"{name:<72} {llama[name]:>12} {ours.get(name, 'missing'):>8}")
short = [n for n in llama if llama[n] == "passed" and ours.get(n) != "passed"]
both = sum(1 for n in llama if llama[n] == "passed" and ours.get(n) == "passed")
print(f"\npassed against llama-server: {sum(v == 'passed' for v in llama.values())} of {len(llama)}; "
      f"of those, against triattn: {both}")
for n in short:
    print(f"FAILS AGAINST TRIATTN ONLY: {n}")
sys.exit(1 if short else 0)
EOF
