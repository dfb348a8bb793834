#!/usr/bin/env python3
"""Decode time per token with and without a JSON schema constraint, on any OpenAI-compatible
server (`triattn serve`, llama-server), /v1/completions streamed and timed client-side:
(time of the last chunk - time of the first) / (completion tokens - 1), median over runs.
Without the schema the reply runs to max_tokens (`ignore_eos`); with it, until the grammar is
complete. The schema defaults to the nested one `triattn bench-grammar` replays.

  scripts/schema_decode_cost.py --url http://127.0.0.1:8080 --runs 5 [--schema-field json_schema]
"""
import argparse
import json
import os
import statistics
import subprocess
import time
import urllib.request


def stream(url, body):
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    first = last = None
    tokens = 0
    text = ""
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            for c in chunk.get("choices", []):
                piece = c.get("text") or ""
                if piece:
                    now = time.perf_counter()
                    first = first or now
                    last = now
                    text += piece
    return (last - first) / max(1, tokens - 1) * 1000, tokens, text


def mask_seconds(url):
    """(sum, count) of triattn serve's grammar-mask histogram; None from other servers."""
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
            lines = r.read().decode().splitlines()
    except (OSError, ValueError):
        return None
    got = {}
    for line in lines:
        for key in ("triattn_grammar_mask_seconds_sum", "triattn_grammar_mask_seconds_count"):
            if line.startswith(key + " "):
                got[key] = float(line.split()[1])
    return (got["triattn_grammar_mask_seconds_sum"], got["triattn_grammar_mask_seconds_count"]) if len(got) == 2 else None


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--schema", help="a JSON schema file (default: bench-grammar's built-in schema)")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--extra", default="{}", help="JSON merged into every request body")
    ap.add_argument("--schema-field", choices=["response_format", "json_schema"], default="response_format",
                    help="how the schema is sent: OpenAI's response_format, or llama-server's own json_schema field")
    a = ap.parse_args()
    if a.schema:
        schema = json.load(open(a.schema))
    else:
        schema = json.loads(subprocess.run([os.path.join(root, "build", "triattn"), "bench-grammar", "--print-schema"],
                                           check=True, capture_output=True, text=True).stdout)
    base = {"prompt": "One customer record as JSON:\n",
            "temperature": 0, "max_tokens": a.max_tokens, "stream": True,
            "stream_options": {"include_usage": True}}
    base.update(json.loads(a.extra))
    modes = {
        "plain": dict(base, ignore_eos=True),
        "json_schema": dict(base, **({"response_format": {"type": "json_schema", "json_schema": {
            "name": "record", "schema": schema, "strict": True}}} if a.schema_field == "response_format"
            else {"json_schema": schema})),
    }
    stream(a.url, modes["plain"])  # warm-up
    for name, body in modes.items():
        before = mask_seconds(a.url)
        runs = [stream(a.url, body) for _ in range(a.runs)]
        after = mask_seconds(a.url)
        ms = statistics.median(r[0] for r in runs)
        valid = ""
        if name == "json_schema":
            try:
                json.loads(runs[-1][2])
                valid = ", the reply parses as JSON"
            except ValueError:
                valid = ", cut at max_tokens" if runs[-1][1] >= a.max_tokens else ", the reply does NOT parse as JSON"
            if before and after and after[1] > before[1]:
                valid += f"; mask {(after[0] - before[0]) / (after[1] - before[1]) * 1000:.3f} ms/token"
        print(f"{name:12s} {ms:.2f} ms/token (median of {a.runs}; {runs[-1][1]} tokens{valid})")


if __name__ == "__main__":
    main()
