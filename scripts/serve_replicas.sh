#!/usr/bin/env bash
# N `triattn serve` replicas behind HAProxy on loopback (deploy/haproxy/triattn.cfg.in;
# docs/serving.md). Each replica listens on a free port; HAProxy on --port (0: a free one).
# Prints "serve_replicas: ready http://127.0.0.1:PORT" once every replica answers /health
# and HAProxy listens. Writes to the state directory: haproxy.cfg, haproxy.log,
# replica-I.log, replicas.tsv (one "name pid port" line per replica), so that a caller can
# signal one replica, and replica-I.exit (its exit status) once one has exited. SIGTERM or
# SIGINT to this script drains every replica (SIGTERM to each), then stops HAProxy.
#
# Usage: scripts/serve_replicas.sh -m MODEL [--replicas 3] [--port 0] [--binary build/triattn]
#          [--state-dir DIR] [--check-inter 1s] [-- FLAGS FOR triattn serve...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
model="" replicas=3 port=0 binary="$root/build/triattn" state="" inter=1s
serve_flags=()
while (($#)); do
  case "$1" in
    -m|--model) model="$2"; shift 2 ;;
    --replicas) replicas="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --state-dir) state="$2"; shift 2 ;;
    --check-inter) inter="$2"; shift 2 ;;
    --) shift; serve_flags=("$@"); break ;;
    *) echo "serve_replicas: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
[ -n "$model" ] || { echo "serve_replicas: -m MODEL is required" >&2; exit 2; }
[[ "$replicas" =~ ^[1-9][0-9]*$ ]] || { echo "serve_replicas: --replicas must be a positive number" >&2; exit 2; }
[[ "$port" =~ ^[0-9]+$ ]] || { echo "serve_replicas: --port must be a number" >&2; exit 2; }
[ -x "$binary" ] || { echo "serve_replicas: no triattn binary at $binary (build it, or pass --binary)" >&2; exit 2; }
haproxy_bin="$(command -v haproxy || true)"
[ -n "$haproxy_bin" ] || haproxy_bin="$(command -v /usr/sbin/haproxy || true)"
[ -n "$haproxy_bin" ] || { echo "serve_replicas: haproxy is not installed; run scripts/setup.sh --test-clients" >&2; exit 2; }
[ -n "$state" ] || state="$(mktemp -d -t triattn-replicas.XXXXXX)"
mkdir -p "$state"
: > "$state/replicas.tsv"

pids=() haproxy_pid=""
stop_all() {
  trap - TERM INT EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -z "$haproxy_pid" ] || { kill -TERM "$haproxy_pid" 2>/dev/null || true; wait "$haproxy_pid" 2>/dev/null || true; }
}
trap 'stop_all; exit 0' TERM INT
trap stop_all EXIT

# Each replica on a free port (--port 0): its port is read from its "listening on" line.
# The port answers 503 "loading" until then, which HAProxy's health check keeps out of rotation.
for ((i = 0; i < replicas; i++)); do
  "$binary" serve -m "$model" --host 127.0.0.1 --port 0 --replica-name "replica-$i" "${serve_flags[@]}" \
    2> "$state/replica-$i.log" &
  pids+=($!)
done
servers=""
for ((i = 0; i < replicas; i++)); do
  rport=""
  for _ in $(seq 600); do
    rport="$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\).*|\1|p' "$state/replica-$i.log" | head -1)"
    [ -n "$rport" ] && break
    kill -0 "${pids[$i]}" 2>/dev/null || { echo "serve_replicas: replica $i exited:" >&2; cat "$state/replica-$i.log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$rport" ] || { echo "serve_replicas: replica $i did not listen within 60 s" >&2; exit 1; }
  printf 'replica-%d\t%d\t%d\n' "$i" "${pids[$i]}" "$rport" >> "$state/replicas.tsv"
  servers+="    server replica-$i 127.0.0.1:$rport"$'\n'
done

if [ "$port" = 0 ]; then
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi
# The template with its three fields filled in (the server lines through a file: sed's
# replacement text cannot hold newlines portably).
printf '%s' "$servers" > "$state/servers.txt"
sed -e "s|@BIND@|127.0.0.1:$port|" -e "s|@CHECK_INTER@|$inter|" \
    -e "/^[[:space:]]*@SERVERS@[[:space:]]*\$/{r $state/servers.txt" -e "d}" "$root/deploy/haproxy/triattn.cfg.in" > "$state/haproxy.cfg"
"$haproxy_bin" -c -q -f "$state/haproxy.cfg" || { echo "serve_replicas: haproxy rejects $state/haproxy.cfg" >&2; exit 1; }
"$haproxy_bin" -db -f "$state/haproxy.cfg" > "$state/haproxy.log" 2>&1 &
haproxy_pid=$!
echo "$haproxy_pid" > "$state/haproxy.pid"
for _ in $(seq 100); do
  if python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null; then
    echo "serve_replicas: ready http://127.0.0.1:$port (state in $state)"
    # Until a signal: replicas may come and go (one drained or killed; its exit status goes
    # to replica-I.exit), HAProxy stays.
    while :; do
      done_pid="" rc=0
      wait -n -p done_pid || rc=$?
      [ -n "$done_pid" ] || { echo "serve_replicas: nothing left to wait for" >&2; exit 1; }
      if [ "$done_pid" = "$haproxy_pid" ]; then
        echo "serve_replicas: haproxy exited ($rc):" >&2; cat "$state/haproxy.log" >&2
        exit 1
      fi
      for ((i = 0; i < replicas; i++)); do
        [ "${pids[$i]}" = "$done_pid" ] || continue
        echo "$rc" > "$state/replica-$i.exit"
        echo "serve_replicas: replica-$i exited ($rc)" >&2
      done
    done
  fi
  kill -0 "$haproxy_pid" 2>/dev/null || break
  sleep 0.1
done
echo "serve_replicas: haproxy did not start:" >&2; cat "$state/haproxy.log" >&2
exit 1
