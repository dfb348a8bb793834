#!/usr/bin/env bash
# Installs the Debian packages triattn needs, only those missing. Safe to run repeatedly.
# --test-clients: also what the client tests need (Chromium, and the npm packages of
# tests/clients from its lockfile; HAProxy, in front of the replicas of tests/serving), and
# torch for the reference test that reads PyTorch stats files;
# scripts/test.sh asks for them, the demo does not.
# --fuzz: also clang-14 and its libFuzzer/sanitizer runtimes (scripts/fuzz.sh).
# --aarch64: also the aarch64 cross compiler, qemu-user and the arm64 libraries the build
# links (Debian multiarch; scripts/test_aarch64.sh).
set -euo pipefail
with_clients=0 with_fuzz=0 with_aarch64=0
for a in "$@"; do
  case "$a" in
    --test-clients) with_clients=1 ;;
    --fuzz) with_fuzz=1 ;;
    --aarch64) with_aarch64=1 ;;
  esac
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ((with_aarch64)) && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "setup: adding the arm64 architecture (multiarch)" >&2
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
fi
pkgs=(cmake ninja-build g++ make pkg-config libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
      libcli11-dev libpcre2-dev libcpp-httplib-dev libssl-dev python3-numpy)
((with_clients)) && pkgs+=(chromium haproxy python3-torch)
((with_fuzz)) && pkgs+=(clang-14 libclang-rt-14-dev)
((with_aarch64)) && pkgs+=(g++-aarch64-linux-gnu qemu-user libpcre2-dev:arm64 libgtest-dev:arm64
                           libcpp-httplib-dev:arm64)
# Installed for the machine's architecture (or arch-independent), or for the one named after
# a colon (libpcre2-dev:arm64). Plain `dpkg -s NAME` fails once a second architecture holds
# the same package.
native="$(dpkg --print-architecture)"
installed() {
  local name="${1%%:*}" arch="$native"
  [[ "$1" == *:* ]] && arch="${1#*:}"
  dpkg-query -W -f='${db:Status-Abbrev}${Architecture}\n' "$name" 2>/dev/null | grep -Eq "^ii +($arch|all)\$"
}
missing=()
for p in "${pkgs[@]}"; do
  installed "$p" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Node runs the client tests (CMake looks for it); it comes with npm on the machine.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
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
