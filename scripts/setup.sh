#!/usr/bin/env bash
# Installs the Debian packages triattn needs, only those missing. Safe to run repeatedly.
# --test-clients: also what the client tests need (Chromium, and the npm packages of
# tests/clients from its lockfile); scripts/test.sh asks for them, the demo does not.
# --fuzz: also clang-14 and its libFuzzer/sanitizer runtimes (scripts/fuzz.sh).
set -euo pipefail
with_clients=0 with_fuzz=0
for a in "$@"; do
  case "$a" in
    --test-clients) with_clients=1 ;;
    --fuzz) with_fuzz=1 ;;
  esac
done
pkgs=(cmake g++ make pkg-config libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
      libcli11-dev libpcre2-dev libcpp-httplib-dev libssl-dev python3-numpy)
((with_clients)) && pkgs+=(chromium)
((with_fuzz)) && pkgs+=(clang-14 libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Node runs the client tests (CMake looks for it); it comes with npm on the machine.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
((with_clients)) || exit 0
# Node.js packages of the client tests, exactly as tests/clients/package-lock.json pins
# them (npm ci). Node and npm come with the machine; Debian's packages otherwise.
root="$(cd "$(dirname "$0")/.." && pwd)"
lock="$root/tests/clients/package-lock.json"
stamp="$root/tests/clients/node_modules/.package-lock.json"
if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
  echo "setup: installing the client test packages (npm ci)" >&2
  npm ci --prefix "$root/tests/clients" --no-audit --no-fund --loglevel=error >/dev/null
fi
