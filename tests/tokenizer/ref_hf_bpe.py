#!/usr/bin/python3
"""Independent reference for HF tokenizers' BPE on a SentencePiece-style tokenizer.json
(normalizer Prepend "▁" + Replace " "->"▁", no pre-tokenizer, byte_fallback, fuse_unk).

Written from the tokenizers documentation, deliberately naive (rescan for the lowest-rank
pair after every merge) so it shares no structure with the C++ heap implementation.
It generated the expected ids in tests/tokenizer/test_spm_hf_json.cpp; rerun to regenerate:

    /usr/bin/python3 tests/tokenizer/ref_hf_bpe.py ../shared/models/tinystories-656k/tokenizer.json

Standard library only.
"""
import json
import sys

STRINGS = [
    "Once upon a time,",
    "Once upon a time, there was a little dog named Max. Max loved to play with his red ball "
    "in the park. One day, he saw a big cat sitting under a tree. \"Hello, cat!\" said Max.",
    "Lily and Tom were best friends. They liked to share their toys and snacks.",
    "  two leading spaces and  double  spaces ",
    "Line one.\nLine two!\n\nThe end?",
    "Numbers: 12345, 3.14 and $100;",
    "It's Tom's ball - isn't it?",
    "café naïve 日本語 emoji 🙂 done",
    "ALL CAPS SHOUTING",
    "x",
]


def encode(tok, text):
    model = tok["model"]
    vocab = model["vocab"]
    ranks = {}
    for r, m in enumerate(model["merges"]):
        a, b = m.split(" ") if isinstance(m, str) else m
        ranks.setdefault((a, b), r)
    unk = model["unk_token"]
    # Normalizer: Prepend then Replace.
    s = ("\u2581" + text).replace(" ", "\u2581") if text else ""
    # Characters -> pieces (byte fallback, then fused <unk>).
    pieces = []
    for ch in s:
        if ch in vocab:
            pieces.append(ch)
            continue
        bts = ["<0x%02X>" % b for b in ch.encode("utf-8")]
        if model.get("byte_fallback") and all(b in vocab for b in bts):
            pieces.extend(bts)
        elif not (model.get("fuse_unk") and pieces and pieces[-1] == unk):
            pieces.append(unk)  # a single character can never spell "<unk>" itself
    # Merges: always the lowest-rank adjacent pair, leftmost among equals.
    while True:
        best = None
        for i in range(len(pieces) - 1):
            r = ranks.get((pieces[i], pieces[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        pieces[i:i + 2] = [pieces[i] + pieces[i + 1]]
    return [vocab[p] for p in pieces]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "../shared/models/tinystories-656k/tokenizer.json"
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    for s in STRINGS:
        ids = encode(tok, s)
        print("    {%s,\n     {%s}}," % (json.dumps(s, ensure_ascii=False), ", ".join(map(str, ids))))


if __name__ == "__main__":
    main()
