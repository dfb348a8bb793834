#!/usr/bin/env python3
"""The needle in two turns through `triattn serve` and its conversation reuse.

Starts `triattn serve` with the KV flags given after `--`, then per needle item sends turn 1
(the document, up to its last line) to /v1/completions with `gen` tokens to generate, and
turn 2 (the document, turn 1's text and the question) as the next request, which continues
the kept sequence (usage.prompt_tokens_details.cached_tokens > 0) instead of prefilling it.
Prints accuracy as `eval needle` scores it (the answer must open the reply) over every item,
and how many second turns continued the cache.

  scripts/needle_serve_turns.py --model ../shared/models/bytelm-2k \\
      --data ../shared/models/bytelm-2k/needle_eval.jsonl --gen 64 -- \\
      --kv-policy triattention --stats byte.stats --kv-budget 128 --window 64 --kv-recall
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def needle_correct(reply, answer):
    return reply.lstrip(" \t\n").startswith(answer)


def start_server(binary, model, flags, parallel):
    cmd = [binary, "serve", "-m", model, "--port", "0", "--parallel", str(parallel), "--reuse-slots",
           str(parallel)] + flags
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:  # the server prints the port it listens on
        if "listening on" in line:
            port = line.rsplit(":", 1)[1].split()[0].strip("/")
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # never let its log block it
            return proc, f"http://127.0.0.1:{port}"
    proc.wait()
    sys.exit(f"triattn serve exited ({proc.returncode}) before listening: {' '.join(cmd)}")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(root, "build", "triattn"))
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True, help="needle items (jsonl: text, answer)")
    ap.add_argument("--gen", type=int, default=64, help="tokens generated between the document and the question")
    ap.add_argument("--limit", type=int, default=0, help="the first N items only (0: all)")
    ap.add_argument("--clients", type=int, default=2, help="conversations in flight (the server's --parallel)")
    ap.add_argument("flags", nargs="*", help="after --: serve's KV flags")
    a = ap.parse_args()
    items = [json.loads(line) for line in open(a.data, encoding="utf-8") if line.strip()]
    if a.limit:
        items = items[: a.limit]
    proc, url = start_server(a.binary, a.model, a.flags, a.clients)

    def conversation(item):
        text = item["text"]
        cut = text.rfind("\n")
        if cut < 0 or cut + 1 == len(text):
            sys.exit("a needle item's text must end with a question line after a line break")
        document, question = text[: cut + 1], text[cut + 1 :]
        first = post(url + "/v1/completions", {"prompt": document, "max_tokens": a.gen, "temperature": 0,
                                               "ignore_eos": True})
        said = first["choices"][0]["text"]
        second = post(url + "/v1/completions", {"prompt": document + said + question, "max_tokens": 10,
                                                "temperature": 0})
        usage = second["usage"]
        cached = usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
        return needle_correct(second["choices"][0]["text"], item["answer"]), cached

    try:
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(a.clients) as pool:
            results = list(pool.map(conversation, items))
    finally:
        proc.terminate()
        proc.wait()
    n = len(results)
    correct = sum(ok for ok, _ in results)
    continued = [(ok, c) for ok, c in results if c > 0]
    print(f"items {n}  accuracy {correct / n:.3f}  continued {len(continued)}/{n} "
          f"(accuracy {sum(ok for ok, _ in continued) / max(1, len(continued)):.3f}, "
          f"mean cached_tokens {sum(c for _, c in continued) / max(1, len(continued)):.0f})  {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
