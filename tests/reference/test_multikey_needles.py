"""scripts/make_multikey_needles.py: the multi-key passkey set it writes, checked independently.

Run with this interpreter (/usr/bin/python3) and with the first python3 on PATH: the same
bytes (standard library only, fixed seed). Every item: 10-16 distinct keys 1-999, one
passkey line per key and the query at the end, the queried key's line exactly once with its
answer, its offsets and byte counts as the fields say, BOS + prompt + answer within
bytelm-2k's 2048 tokens (1 byte = 1 token). --count and --seed do what they say, and
`triattn eval needle` reads the file.
"""

import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cli as C  # noqa: E402

SCRIPT = os.path.join(C.HERE, "..", "..", "scripts", "make_multikey_needles.py")
MODEL = os.path.join(C.shared_dir(), "models", "bytelm-2k")
SOURCE = os.path.join(MODEL, "valid_sample.txt")

C.binary()
c = C.Checks("multi-key needle generator")
if not os.path.exists(SOURCE):
    C.fail("missing %s (../shared/models/bytelm-2k)" % SOURCE)
work = C.work_dir("multikey_needles")


def generate(python, name, *args):
    out = os.path.join(work, name)
    cmd = [python, SCRIPT, "-o", out, "--source", SOURCE] + [str(a) for a in args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        C.fail("%s failed (exit %d):\n%s" % (" ".join(cmd), p.returncode, p.stderr.decode(errors="replace")))
    with open(out, "rb") as f:
        return f.read()


def items_of(data):
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


path_python = shutil.which("python3")
if not path_python:
    C.fail("no python3 on PATH")
default = generate(sys.executable, "default.jsonl")
c.check(generate(path_python, "path_python.jsonl") == default,
        "%s and %s write the same bytes" % (sys.executable, path_python))
items = items_of(default)
c.check(len(items) == 200, "default --count: 200 items (got %d)" % len(items))

fields = ["text", "answer", "key", "n_keys", "filler_bytes", "needle_offset", "distance"]
line_re = re.compile(r"passkey ID-(\d+) = (\d{6})\n")
bad = []
for n, it in enumerate(items, 1):
    problems = []
    if list(it) != fields:
        problems.append("fields %s" % list(it))
        bad.append((n, problems))
        continue
    raw = it["text"].encode("utf-8")
    text, key, answer = it["text"], it["key"], it["answer"]
    lines = line_re.findall(text)
    keys = [int(k) for k, _ in lines]
    query = "passkey ID-%d = " % key
    if not text.endswith("\n" + query):
        problems.append("does not end with the query")
    if not (10 <= it["n_keys"] <= 16 and len(keys) == it["n_keys"] and len(set(keys)) == len(keys)):
        problems.append("%d keys (%d distinct), n_keys %d" % (len(keys), len(set(keys)), it["n_keys"]))
    if not all(1 <= k <= 999 for k in keys) or key not in keys:
        problems.append("keys %s, queried %d" % (keys, key))
    if text.count("passkey ID-") != len(keys) + 1:
        problems.append("%d passkey mentions" % text.count("passkey ID-"))
    needle = "passkey ID-%d = %s\n" % (key, answer)
    if text.count(needle) != 1 or text.count("ID-%d = " % key) != 2:
        problems.append("the answer follows its key %d times" % text.count(needle))
    if not re.fullmatch(r"\d{6}", answer):
        problems.append("answer %r" % answer)
    if 1 + len(raw) + len(answer.encode()) > 2048:
        problems.append("BOS + prompt + answer = %d tokens" % (1 + len(raw) + len(answer)))
    if raw[it["needle_offset"]:].decode("utf-8").find(needle) != 0 or \
            (it["needle_offset"] > 0 and raw[it["needle_offset"] - 1:it["needle_offset"]] != b"\n"):
        problems.append("needle_offset %d is not the start of the needle line" % it["needle_offset"])
    if it["needle_offset"] + it["distance"] != len(raw) - len(query):
        problems.append("distance %d does not reach the query" % it["distance"])
    needles = sum(len(("passkey ID-%s = %s\n" % kv).encode()) for kv in lines)
    if it["filler_bytes"] != len(raw) - needles - len(query) or not 1200 <= it["filler_bytes"] <= 1500:
        problems.append("filler_bytes %d, text without passkey lines %d" % (it["filler_bytes"], len(raw) - needles - len(query)))
    if problems:
        bad.append((n, problems))
c.check(not bad, "every item keeps the invariants%s" % "".join("\n     item %d: %s" % (n, "; ".join(p)) for n, p in bad[:5]))
c.check(len({it["text"] for it in items}) == len(items), "the 200 prompts differ")
c.check(len({it["n_keys"] for it in items}) >= 5, "key counts vary over 10-16")

c.check(generate(sys.executable, "again.jsonl") == default, "the same seed writes the same bytes")
five = items_of(generate(sys.executable, "five.jsonl", "--count", 5, "--seed", 11))
c.check(len(five) == 5, "--count 5: 5 items (got %d)" % len(five))
c.check([it["text"] for it in five] != [it["text"] for it in items[:5]], "--seed 11 writes other prompts")

out = C.work_dir("multikey_needles_eval")
C.run("eval", "needle", "-m", MODEL, "--data", os.path.join(work, "default.jsonl"), "--limit", 2, "--policies", "full",
      "-t", 2, "-q", "-o", out)
with open(os.path.join(out, "results.json")) as f:
    j = json.load(f)
full = [r for r in j["results"] if r["policy"] == "full"]
c.check(j["items"] == 2 and len(full) == 1 and len(full[0]["samples"]) == 2,
        "triattn eval needle reads the file: %d items, %d full results" % (j["items"], len(full)))
for s, it in zip(full[0]["samples"] if full else [], items):
    c.check(s["answer"] == it["answer"] and s["kv_peak_tokens"] >= 1 + len(it["text"].encode()),
            "line %d: answer %s, output %r, KV peak %d >= BOS + prompt %d"
            % (s["line"], s["answer"], s["output"], s["kv_peak_tokens"], 1 + len(it["text"].encode())))
c.finish()
