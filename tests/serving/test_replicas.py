#!/usr/bin/env python3
"""Three `triattn serve` replicas behind HAProxy (scripts/serve_replicas.sh, docs/serving.md).

Runs multi-turn conversations through HAProxy, each with its own X-Session-Id, and meanwhile
drains one replica (SIGTERM, with a long generation running on it) and kills another
(SIGKILL). Passes (exit 0) when:
  - a follow-up turn served by the same replica as the turn before continues its kept cache
    (usage.prompt_tokens_details.cached_tokens > 0) in at least 95% of cases;
  - no request fails but those in flight at the kill, and every request begun after the kill
    succeeds;
  - the drained replica answers /health 503 "draining" while its long generation finishes
    whole, then exits 0; the killed one exits with 137.
Fails, never skips, when haproxy is missing (scripts/setup.sh --test-clients installs it).
Environment: TRIATTN_BINARY (default build/triattn), TRIATTN_SHARED_DIR (default ../shared).
"""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("TRIATTN_BINARY", os.path.join(ROOT, "build", "triattn"))
SHARED = os.environ.get("TRIATTN_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))
MODEL = os.path.join(SHARED, "models", "bytelm-2k")  # bytes as tokens: a text prompt extends exactly
SESSIONS, TURNS, MAX_TOKENS, LONG_TOKENS = 9, 8, 8, 600


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def request(port, method, path, body=None, session=None, timeout=60):
    """(status, parsed body or raw text, headers); status None when the connection failed."""
    headers = {"Content-Type": "application/json"}
    if session:
        headers["X-Session-Id"] = session
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request(method, path, json.dumps(body) if body is not None else None, headers)
        r = c.getresponse()
        data = r.read().decode("utf-8", "replace")
        c.close()
    except (OSError, http.client.HTTPException) as e:
        return None, str(e), {}
    try:
        data = json.loads(data)
    except ValueError:
        pass
    return r.status, data, {k.lower(): v for k, v in r.getheaders()}


class Record:
    def __init__(self, session, turn, start):
        self.session, self.turn, self.start = session, turn, start
        self.end = self.status = self.replica = self.cached = None
        self.error = ""


def converse(port, session, records, lock):
    prompt = f"Session {session}. Once upon a time there was a little"
    for turn in range(TURNS):
        rec = Record(session, turn, time.monotonic())
        status, body, headers = request(port, "POST", "/v1/completions",
                                        {"prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0}, session)
        rec.end, rec.status, rec.replica = time.monotonic(), status, headers.get("x-triattn-replica")
        if status == 200:
            rec.cached = body["usage"]["prompt_tokens_details"]["cached_tokens"]
            prompt += body["choices"][0]["text"] + f" And then, turn {turn},"
        else:
            rec.error = str(body)[:200]
        with lock:
            records.append(rec)


def long_stream(port, session, out):
    """A streamed generation of LONG_TOKENS tokens; out gets its first-chunk time and its end."""
    body = {"prompt": "Once upon a time", "max_tokens": LONG_TOKENS, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        c.request("POST", "/v1/completions", json.dumps(body),
                  {"Content-Type": "application/json", "X-Session-Id": session})
        r = c.getresponse()
        out["status"], out["replica"] = r.status, r.getheader("X-Triattn-Replica")
        events = []
        for line in r:
            line = line.decode("utf-8", "replace").strip()
            if line.startswith("data: "):
                out.setdefault("first", time.monotonic())
                events.append(line[6:])
        out["events"] = events
    except (OSError, http.client.HTTPException) as e:
        out["error"] = str(e)
    out["end"] = time.monotonic()


def main():
    haproxy = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None)
    if not haproxy:
        fail("haproxy is not installed; run scripts/setup.sh --test-clients")
    if not os.path.exists(MODEL):
        fail(f"no model at {MODEL}")
    state = tempfile.mkdtemp(prefix="triattn-replicas-test.")
    log = open(os.path.join(state, "serve_replicas.log"), "w")
    script = subprocess.Popen(
        ["bash", os.path.join(ROOT, "scripts", "serve_replicas.sh"), "-m", MODEL, "--replicas", "3",
         "--binary", BINARY, "--state-dir", state, "--check-inter", "300ms", "--",
         "--threads", "1", "--parallel", "4", "--reuse-slots", "32", "--drain-timeout", "30"],
        stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        run(script, state)
    finally:
        if script.poll() is None:
            script.send_signal(signal.SIGTERM)
            try:
                script.wait(30)
            except subprocess.TimeoutExpired:
                script.kill()


def run(script, state):
    line = script.stdout.readline()
    if "ready http://127.0.0.1:" not in line:
        fail("serve_replicas.sh did not start: " + line + open(os.path.join(state, "serve_replicas.log")).read())
    port = int(line.split("ready http://127.0.0.1:")[1].split()[0])
    replicas = {}
    for row in open(os.path.join(state, "replicas.tsv")):
        name, pid, rport = row.split()
        replicas[name] = (int(pid), int(rport))
    if len(replicas) != 3:
        fail(f"replicas.tsv lists {len(replicas)} replicas")

    # A session that lands on replica-0, for the long generation its drain must wait for.
    drain_session = None
    for k in range(200):
        status, _, headers = request(port, "POST", "/v1/completions",
                                     {"prompt": "Hi", "max_tokens": 1}, f"probe-{k}")
        if status != 200:
            fail(f"probe request got {status}")
        if headers.get("x-triattn-replica") == "replica-0":
            drain_session = f"probe-{k}"
            break
    if not drain_session:
        fail("no session id of 200 probes landed on replica-0")

    records, lock = [], threading.Lock()
    talkers = [threading.Thread(target=converse, args=(port, f"s{i}", records, lock)) for i in range(SESSIONS)]
    for t in talkers:
        t.start()

    def done():
        with lock:
            return len(records)

    def wait_for(cond, seconds, what):
        end = time.monotonic() + seconds
        while not cond():
            if time.monotonic() > end:
                fail("timed out waiting for " + what)
            time.sleep(0.01)

    total = SESSIONS * TURNS
    wait_for(lambda: done() >= total // 4, 60, "a quarter of the turns")
    # Drain replica-0 while a long generation runs on it.
    long_out = {}
    long_thread = threading.Thread(target=long_stream, args=(port, drain_session, long_out))
    long_thread.start()
    wait_for(lambda: "first" in long_out or "end" in long_out, 30, "the long generation's first chunk")
    t_term = time.monotonic()
    os.kill(replicas["replica-0"][0], signal.SIGTERM)
    seen_draining = False
    end = time.monotonic() + 5
    while time.monotonic() < end and not seen_draining and "end" not in long_out:
        status, body, _ = request(replicas["replica-0"][1], "GET", "/health", timeout=5)
        seen_draining = status == 503 and isinstance(body, dict) and body.get("status") == "draining"
        time.sleep(0.02)

    wait_for(lambda: done() >= total * 3 // 5, 60, "three fifths of the turns")
    t_signal = time.monotonic()
    os.kill(replicas["replica-1"][0], signal.SIGKILL)
    # In flight at the kill: not ended when the signal went, begun before the process was gone
    # (the script has reaped it).
    wait_for(lambda: os.path.exists(os.path.join(state, "replica-1.exit")), 10, "replica-1 to be reaped")
    t_kill = time.monotonic()
    for t in talkers:
        t.join()
    long_thread.join()
    wait_for(lambda: os.path.exists(os.path.join(state, "replica-0.exit")), 40, "replica-0 to exit")

    problems = []
    # The drained replica: draining while its long generation went on, which finished whole.
    if not seen_draining:
        problems.append("replica-0 never answered /health 503 draining while its long generation ran")
    if long_out.get("status") != 200 or long_out.get("replica") != "replica-0":
        problems.append(f"the long generation: {long_out.get('status')} from {long_out.get('replica')} "
                        f"{long_out.get('error', '')}")
    else:
        ev = long_out.get("events", [])
        usage = json.loads(ev[-2]).get("usage") if len(ev) >= 2 and ev[-1] == "[DONE]" else None
        if not usage or usage.get("completion_tokens") != LONG_TOKENS:
            problems.append(f"the long generation did not finish whole on the draining replica: {ev[-2:]}")
        if long_out["end"] <= t_term:
            problems.append("the long generation ended before the SIGTERM (make it longer)")
    exit0 = open(os.path.join(state, "replica-0.exit")).read().strip()
    exit1 = open(os.path.join(state, "replica-1.exit")).read().strip()
    if exit0 != "0":
        problems.append(f"the drained replica exited with {exit0}, not 0")
    if exit1 != "137":
        problems.append(f"the killed replica exited with {exit1}, not 137")

    failed = [r for r in records if r.status != 200]
    for r in failed:
        if not (r.start <= t_kill and r.end >= t_signal):
            problems.append(f"{r.session} turn {r.turn} failed ({r.status} {r.error}) but was not in flight at the "
                            f"kill (start {r.start - t_kill:+.2f} s, end {r.end - t_kill:+.2f} s)")
    if len(failed) > 4 + 4:
        problems.append(f"{len(failed)} requests failed, more than the killed replica had in flight")

    # Affinity and the kept cache: a follow-up turn on the same replica continues it.
    by_session = {}
    for r in sorted(records, key=lambda r: (r.session, r.turn)):
        by_session.setdefault(r.session, []).append(r)
    same = hits = 0
    for turns in by_session.values():
        for prev, cur in zip(turns, turns[1:]):
            if prev.status == 200 and cur.status == 200 and prev.replica == cur.replica:
                same += 1
                hits += cur.cached > 0
    follow_ups = sum(1 for r in records if r.turn > 0 and r.status == 200)
    if same < follow_ups // 2:
        problems.append(f"only {same} of {follow_ups} follow-up turns stayed on their replica")
    if same == 0 or hits < 0.95 * same:
        problems.append(f"cached_tokens > 0 in {hits} of {same} follow-up turns on the same replica (< 95%)")

    summary = {"requests": len(records), "failed": len(failed), "follow_ups": follow_ups, "same_replica": same,
               "cache_hits": hits, "drained_exit": exit0, "killed_exit": exit1, "seen_draining": seen_draining,
               "state": state}
    print(json.dumps(summary), flush=True)
    if problems:
        for p in problems:
            print("problem: " + p)
        print("haproxy log: " + os.path.join(state, "haproxy.log"))
        sys.exit(1)
    script.send_signal(signal.SIGTERM)
    if script.wait(60) != 0:
        fail("serve_replicas.sh did not exit 0 on SIGTERM")
    shutil.rmtree(state, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
