#!/usr/bin/env python3
"""Stands in for llama-server's binary so llama.cpp's own server tests
(tools/server/tests, which start LLAMA_SERVER_BIN_PATH with llama-server's flags) can run
against `triattn serve` and, offline, against llama-server itself with one local model.

  SHIM_KIND=triattn SHIM_BIN=build/triattn SHIM_MODEL=stories260K.gguf  (then exec triattn serve)
  SHIM_KIND=llama   SHIM_BIN=llama-server  SHIM_MODEL=stories260K.gguf  (then exec llama-server)

The tests name their model as a Hugging Face repository; both kinds get SHIM_MODEL instead
(only the repository in SHIM_REPO, default ggml-org/test-model-stories260K, is accepted).
For triattn every flag is translated or refused by name; scripts/llama_server_tests.sh runs
the suites through this and compares the two.
"""
import os
import sys

REPO = os.environ.get("SHIM_REPO", "ggml-org/test-model-stories260K")

# llama-server flag -> triattn serve flag, for flags that take one value.
VALUED = {
    "--host": "--host", "--port": "--port", "--temp": "--temp", "--seed": "--seed",
    "--ctx-size": "--ctx", "--parallel": "--parallel", "--n-predict": "-n",
    "--threads": "-t", "--api-key": "--api-key", "--chat-template-file": "--chat-template",
    "--batch-size": "--max-batched-tokens",
}
# Flags that change nothing in triattn: it always renders the model's Jinja template, always
# batches continuously, always serves /metrics and never downloads; it has no /slots endpoint.
NO_EFFECT = {"--jinja", "--cont-batching", "--metrics", "--no-slots", "--offline"}


def fail(msg):
    print(f"llama_server_shim: {msg}", file=sys.stderr)
    sys.exit(2)


def take_model(args):
    """Replaces --hf-repo REPO (and a --hf-file beside it) with --model SHIM_MODEL."""
    model = os.environ.get("SHIM_MODEL") or fail("SHIM_MODEL is not set")
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a == "--hf-repo":
            if args[i + 1] != REPO:
                fail(f"--hf-repo {args[i + 1]}: only {REPO} is available offline (SHIM_MODEL)")
            out += ["--model", model]
            i += 2
        elif a == "--hf-file":
            fail(f"--hf-file {args[i + 1]}: no such file offline")
        else:
            out.append(a)
            i += 1
    return out


def to_triattn(args):
    out, i = ["serve"], 0
    while i < len(args):
        a = args[i]
        if a in VALUED:
            out += [VALUED[a], args[i + 1]]
            i += 2
        elif a in ("--model", "-m"):
            out += ["--model", args[i + 1]]
            i += 2
        elif a == "--reasoning-format":
            out += ["--reasoning-format", args[i + 1]]
            i += 2
        elif a == "--alias":
            # Replies name the model by its file; the tests send and check no model name.
            i += 2
        elif a in NO_EFFECT:
            i += 1
        elif a == "--no-jinja":
            # llama-server's built-in templates without tools; triattn always uses Jinja.
            i += 1
        else:
            fail(f"{a}: no triattn serve equivalent")
    return out


def main():
    kind = os.environ.get("SHIM_KIND", "triattn")
    binary = os.environ.get("SHIM_BIN") or fail("SHIM_BIN is not set")
    args = take_model(sys.argv[1:])
    if kind == "llama":
        argv = [binary] + args
    elif kind == "triattn":
        argv = [binary] + to_triattn(args)
    else:
        fail(f"SHIM_KIND={kind}: expected triattn or llama")
    print("llama_server_shim: " + " ".join(argv), file=sys.stderr, flush=True)
    os.execv(binary, argv)


if __name__ == "__main__":
    main()
