"""Token pieces for decoding reference output to text (tests only).

Only decoding: SentencePiece-style pieces where '▁' is a space and '<0xNN>' is one raw byte.
Importing this module has no side effects.
"""

import json
import re
import struct

_BYTE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def pieces_from_tokenizer_json(path):
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    vocab = dict(tj["model"]["vocab"])
    for t in tj.get("added_tokens", []):
        vocab[t["content"]] = t["id"]
    pieces = [""] * (max(vocab.values()) + 1)
    for piece, i in vocab.items():
        pieces[i] = piece
    return pieces


def pieces_from_llama2c(path):
    """tokNNN.bin: int32 max_len, then per token {float32 score, int32 len, bytes}."""
    with open(path, "rb") as f:
        blob = f.read()
    p, pieces = 4, []
    while p < len(blob):
        _, n = struct.unpack_from("<fi", blob, p)
        p += 8
        pieces.append(blob[p:p + n].decode("utf-8", errors="replace"))
        p += n
    return pieces


def pieces_from_gguf_metadata(meta):
    return list(meta["tokenizer.ggml.tokens"])


def decode(pieces, ids):
    out = bytearray()
    for i in ids:
        piece = pieces[i]
        m = _BYTE.match(piece)
        if m:
            out.append(int(m.group(1), 16))
        else:
            out += piece.replace("\u2581", " ").encode("utf-8")
    return out.decode("utf-8", errors="replace")
