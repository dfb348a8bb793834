#!/usr/bin/env python3
"""Soak test of `triattn serve` under hostile load (docs/reliability.md, "Serving under load").

Starts the server on the TinyStories model and runs bursts of CLIENTS concurrent clients for
MINUTES in all. Most clients are ordinary (streamed and whole completions and chats, with
per-request KV policies); among them some abandon their request mid-stream or mid-wait, some
send their head one line every two seconds, some send bodies nested 100,000 deep, bodies over
the size limit (by Content-Length and by chunks) and malformed request lines. After each burst
the server idles a few seconds and its resident memory and /metrics are read.

Passes (exit 0) when: the server never died; no well-formed request got a 5xx; every hostile
request got its 4xx (or a close); every abandoned request ended as cancelled (499 in /metrics); after the last burst nothing is running or queued and only
the conversations kept for reuse hold KV reservations;
and resident memory after each burst past the first two stays within 5% of the first of them.
A JSON summary goes to stdout (and --out FILE).

Usage: scripts/soak_serve.py [--binary build/triattn] [--model ../shared/models/tinystories-656k]
                             [--minutes 10] [--clients 64] [--burst 50] [--seed 1] [--out FILE]
                             [--bursts N] [--no-rss-check]
CTest runs a bounded version (serving_soak: 64 clients, four bursts of 8 s).
"""
import argparse
import http.client
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.failures = []

    def add(self, kind, outcome, ok, detail=""):
        with self.lock:
            key = f"{kind}:{outcome}"
            self.counts[key] = self.counts.get(key, 0) + 1
            if not ok and len(self.failures) < 20:
                self.failures.append(f"{kind}: {outcome} {detail[:200]}")


def raw(port, data, read=True, timeout=30):
    """Sends bytes on a fresh connection; returns what came back (until close or timeout)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        if data:
            s.sendall(data)
        if not read:
            return b""
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        s.close()


def status_of(resp):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", resp)
    return int(m.group(1)) if m else 0


POLICIES = [{}, {"kv_policy": "streaming", "kv_budget": 64, "divide_length": 16},
            {"kv_policy": "snapkv", "kv_budget": 48, "divide_length": 16, "window": 8}]
PROMPTS = ["Once upon a time,", "The little dog", "Lily and Tom went to the park.", "A big red ball"]


def ordinary(port, rng, tally):
    chat = rng.random() < 0.4
    stream = rng.random() < 0.6
    body = dict(rng.choice(POLICIES))
    body.update({"max_tokens": rng.randint(8, 96), "temperature": rng.choice([0, 0.8]), "stream": stream})
    if chat:
        body["messages"] = [{"role": "user", "content": rng.choice(PROMPTS)}]
    else:
        body["prompt"] = rng.choice(PROMPTS)
    path = "/v1/chat/completions" if chat else "/v1/completions"
    kind = ("chat" if chat else "completion") + ("-stream" if stream else "")
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read().decode(errors="replace")
        c.close()
    except Exception as e:  # a dropped connection to a well-formed request is a failure
        tally.add(kind, "exception", False, repr(e))
        return
    ok = r.status == 200 and (not stream or data.rstrip().endswith("data: [DONE]"))
    tally.add(kind, str(r.status), ok, data)


def abandoning(port, rng, tally):
    # Endless within the server's --max-tokens-limit: only the client going away ends it.
    body = json.dumps({"prompt": rng.choice(PROMPTS), "max_tokens": 60000, "ignore_eos": True,
                       "stream": rng.random() < 0.5, "kv_policy": "streaming", "kv_budget": 64,
                       "divide_length": 16}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    time.sleep(rng.uniform(0.2, 2.0))
    s.close()  # gone, mid-stream or mid-wait
    tally.add("abandoning", "left", True)


def slow(port, rng, tally):
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    got = b""
    try:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\n")
        for i in range(30):
            time.sleep(2)
            s.sendall(b"X-Slow-%d: %d\r\n" % (i, i))
    except (BrokenPipeError, ConnectionResetError):
        pass
    try:
        got = s.recv(4096)
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    st = status_of(got)
    tally.add("slow", str(st), st in (408, 0), got.decode(errors="replace"))


def deep(port, rng, tally):
    nest = "[" * 100000
    body = ('{"prompt":"hi","n":%s}' % nest).encode()
    resp = raw(port, b"POST /v1/completions HTTP/1.1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
               % (len(body), body))
    st = status_of(resp)
    tally.add("deep", str(st), st == 400, resp.decode(errors="replace"))


def oversized(port, rng, tally):
    if rng.random() < 0.5:
        head = b"POST /v1/completions HTTP/1.1\r\nContent-Length: 134217728\r\n\r\n"
    else:
        head = b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n8000000\r\n"
    resp = raw(port, head + b"x" * 65536)
    st = status_of(resp)
    tally.add("oversized", str(st), st == 413, resp.decode(errors="replace"))


def garbage(port, rng, tally):
    resp = raw(port, rng.choice([b"HELLO\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                                 b"GET /\x01 HTTP/1.1\r\n\r\n"]))
    st = status_of(resp)
    tally.add("garbage", str(st), 400 <= st < 500 or st == 505, resp.decode(errors="replace"))


KINDS = [(ordinary, 0.60), (abandoning, 0.15), (slow, 0.05), (deep, 0.07), (oversized, 0.07), (garbage, 0.06)]


def client(port, seed, until, tally):
    rng = random.Random(seed)
    while time.time() < until:
        x, acc = rng.random(), 0.0
        for fn, w in KINDS:
            acc += w
            if x < acc:
                break
        try:
            fn(port, rng, tally)
        except Exception as e:
            tally.add(fn.__name__, "client-exception", fn is not ordinary, repr(e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "triattn"))
    ap.add_argument("--model", default=os.path.join(ROOT, "..", "shared", "models", "tinystories-656k"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--burst", type=float, default=50, help="seconds of load per burst")
    ap.add_argument("--bursts", type=int, help="run this many bursts instead of for --minutes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-rss-check", action="store_true",
                    help="do not judge resident memory (sanitizer builds hold freed memory in quarantine)")
    ap.add_argument("--out")
    a = ap.parse_args()

    server = subprocess.Popen([a.binary, "serve", "-m", a.model, "--port", "0", "--parallel", "4", "--max-queue",
                               str(a.clients + 8), "--kv-memory", "64", "-t", str(a.threads), "--read-timeout", "10"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port = None
    for line in server.stderr:
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    if port is None:
        print("soak: the server did not start", file=sys.stderr)
        return 1
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()

    tally = Tally()
    start = time.time()
    end = start + a.minutes * 60
    bursts = []
    before = metrics(port)
    burst = 0
    while (burst < a.bursts if a.bursts else time.time() < end) and server.poll() is None:
        until = time.time() + a.burst if a.bursts else min(end, time.time() + a.burst)
        threads = [threading.Thread(target=client, args=(port, a.seed * 1000 + burst * 100 + i, until, tally))
                   for i in range(a.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(5)  # idle: abandoned work is cancelled, slow sockets time out
        if server.poll() is not None:
            break
        m = metrics(port)
        bursts.append({"burst": burst, "t_s": round(time.time() - start), "rss_kib": rss_kib(server.pid),
                       "running": m.get("triattn_sequences_running"), "queued": m.get("triattn_sequences_queued"),
                       "kv_reserved_bytes": m.get("triattn_kv_reserved_bytes"),
                       "connections": m.get("triattn_http_connections")})
        print(json.dumps(bursts[-1]), file=sys.stderr, flush=True)
        burst += 1
    alive = server.poll() is None
    after = metrics(port) if alive else {}
    if alive:
        server.terminate()
        server.wait(timeout=30)

    well_formed_5xx = sum(n for k, n in tally.counts.items()
                          if k.split(":")[0] in ("chat", "completion", "chat-stream", "completion-stream")
                          and k.split(":")[1].startswith("5"))
    settled = [b["rss_kib"] for b in bursts[2:]]
    base = settled[0] if settled else 0
    rss_spread = max(abs(r - base) / base for r in settled) if base else 0.0
    summary = {
        "minutes": a.minutes if not a.bursts else None, "clients": a.clients, "bursts": bursts, "requests": tally.counts,
        "failures": tally.failures, "server_alive": alive, "well_formed_5xx": well_formed_5xx,
        "rss_spread_after_warmup": round(rss_spread, 4), "rss_checked": not a.no_rss_check,
        "metrics_before": {k: v for k, v in before.items() if not k.startswith("triattn_time") and "inter_token" not in k},
        "metrics_after": {k: v for k, v in after.items() if not k.startswith("triattn_time") and "inter_token" not in k},
    }
    # Every abandoned request was cancelled as such (499), none refused or left running; the
    # conversations kept for reuse hold their reservations, nothing else may.
    abandoned = tally.counts.get("abandoning:left", 0)
    cancelled = after.get('triattn_requests_total{status="499"}', 0)
    summary["abandoned"], summary["cancelled_499"] = abandoned, cancelled
    rss_ok = a.no_rss_check or (len(settled) >= 2 and rss_spread <= 0.05)
    ok = (alive and well_formed_5xx == 0 and not tally.failures and rss_ok and cancelled == abandoned
          and after.get("triattn_sequences_running") == 0 and after.get("triattn_sequences_queued") == 0
          and after.get("triattn_kv_reserved_bytes") == after.get("triattn_kv_kept_bytes"))
    text = json.dumps(summary, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print("soak: " + ("passed" if ok else "FAILED"), file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
