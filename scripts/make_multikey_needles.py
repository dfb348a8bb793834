#!/usr/bin/env python3
"""Multi-key passkey prompts for `triattn eval needle`, in the format of bytelm-2k's needle_eval.jsonl.

Each prompt is whole lines of held-out text (bytelm-2k's valid_sample.txt) with 10-16 lines
`passkey ID-<k> = <6 random digits>` (distinct keys 1-999) inserted at random line
boundaries, then one query `passkey ID-<k> = ` for one of them; the answer is its 6 digits.
Many keys make a policy choose among many needle-like lines, and a recall step find the
right one. BOS + prompt + answer fit bytelm-2k's 2048-token context (1 byte = 1 token).

Fields per line: text, answer, key, n_keys, filler_bytes (bytes of held-out text),
needle_offset (byte offset of the queried key's line), distance (bytes from that line to the
query). Deterministic for a given --seed. Standard library only.

Usage: python3 scripts/make_multikey_needles.py -o multikey.jsonl [--count 200] [--seed 7]
"""

import argparse
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SOURCE = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "models", "bytelm-2k", "valid_sample.txt"))
CONTEXT = 2048  # bytelm-2k's context, BOS included
MIN_KEYS, MAX_KEYS = 10, 16
MIN_FILLER, MAX_FILLER = 1200, 1500


def byte_len(s):
    return len(s.encode("utf-8"))


def read_lines(path):
    """Whole lines of the source, each with its '\\n'; none that could pass for a needle."""
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    lines = [line + "\n" for line in text.split("\n")[:-1]]
    return [line for line in lines if "passkey" not in line]


def filler(rng, lines):
    """Consecutive whole lines from a random start, between MIN_FILLER and MAX_FILLER bytes."""
    for _ in range(1000):
        target = rng.randint(MIN_FILLER, MAX_FILLER)
        at = rng.randrange(len(lines))
        chosen, size = [], 0
        while at < len(lines) and size < target and size + byte_len(lines[at]) <= MAX_FILLER:
            chosen.append(lines[at])
            size += byte_len(lines[at])
            at += 1
        if size >= MIN_FILLER:
            return chosen, size
    sys.exit("make_multikey_needles: no run of whole lines of %d-%d bytes in the source" % (MIN_FILLER, MAX_FILLER))


def make_item(rng, lines):
    body, filler_bytes = filler(rng, lines)
    n_keys = rng.randint(MIN_KEYS, MAX_KEYS)
    keys = rng.sample(range(1, 1000), n_keys)
    values = {k: "%06d" % rng.randrange(10**6) for k in keys}
    # Each needle goes before line `at` of the filler (len(body): after the last line).
    places = sorted((rng.randint(0, len(body)), i) for i in range(n_keys))
    queried = rng.choice(keys)
    text, needle_offset, next_place = "", None, 0
    for at in range(len(body) + 1):
        while next_place < n_keys and places[next_place][0] == at:
            k = keys[places[next_place][1]]
            if k == queried:
                needle_offset = byte_len(text)
            text += "passkey ID-%d = %s\n" % (k, values[k])
            next_place += 1
        if at < len(body):
            text += body[at]
    query_offset = byte_len(text)
    text += "passkey ID-%d = " % queried
    item = {"text": text, "answer": values[queried], "key": queried, "n_keys": n_keys, "filler_bytes": filler_bytes,
            "needle_offset": needle_offset, "distance": query_offset - needle_offset}
    check(item)
    return item


def check(item):
    """The invariants every item keeps (kept when Python runs with -O, unlike assert)."""
    text, answer, key = item["text"], item["answer"], item["key"]
    needle = "passkey ID-%d = %s\n" % (key, answer)
    problems = []
    if 1 + byte_len(text) + byte_len(answer) > CONTEXT:
        problems.append("BOS + prompt + answer is %d tokens, more than %d" % (1 + byte_len(text) + byte_len(answer), CONTEXT))
    if text.count(needle) != 1:
        problems.append("the needle line appears %d times" % text.count(needle))
    if text.count("passkey ID-") != item["n_keys"] + 1:
        problems.append("%d passkey lines for %d keys and the query" % (text.count("passkey ID-"), item["n_keys"]))
    if not MIN_KEYS <= item["n_keys"] <= MAX_KEYS:
        problems.append("%d keys" % item["n_keys"])
    if not text.endswith("\npasskey ID-%d = " % key):
        problems.append("the prompt does not end with the query line")
    if text.encode("utf-8")[item["needle_offset"]:].decode("utf-8").find(needle) != 0:
        problems.append("needle_offset does not point at the needle line")
    if problems:
        sys.exit("make_multikey_needles: bad item (%s): %s" % ("; ".join(problems), json.dumps(item)[:200]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True, help="the JSONL file to write")
    ap.add_argument("--count", type=int, default=200, help="prompts (default 200)")
    ap.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="held-out text, whole lines (default bytelm-2k's valid_sample.txt)")
    args = ap.parse_args()
    if args.count < 1:
        sys.exit("make_multikey_needles: --count must be at least 1")
    lines = read_lines(args.source)
    if not lines:
        sys.exit("make_multikey_needles: %s has no lines" % args.source)
    rng = random.Random(args.seed)
    items = [make_item(rng, lines) for _ in range(args.count)]
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for item in items:
            f.write(json.dumps(item) + "\n")
    os.replace(tmp, args.output)
    print("make_multikey_needles: %d prompts (%d-%d keys, %d-%d bytes of text) to %s" % (
        len(items), min(i["n_keys"] for i in items), max(i["n_keys"] for i in items),
        min(byte_len(i["text"]) for i in items), max(byte_len(i["text"]) for i in items), args.output))


if __name__ == "__main__":
    main()
