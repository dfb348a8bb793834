#!/usr/bin/env bash
# fuzz/seeds.sh TARGET CORPUS_DIR SEEDS_DIR: fills CORPUS_DIR with TARGET's seeds (idempotent):
# the real files in ../shared (small ones, or cut-down copies of big ones), the files
# fuzz_make_seeds wrote to SEEDS_DIR, and hand-written inputs. Multi-part inputs join their
# files with the separator of fuzz/fuzz_util.h.
set -euo pipefail
target=$1 corpus=$2 seeds=$3
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$(cd "$root/../shared" && pwd)"
mkdir -p "$corpus"
sep=$'\n#--8<--#\n'
put() {  # put NAME FILE...: the files joined by the separator
  local name=$1; shift
  local out="$corpus/seed-$name" first=1
  : > "$out"
  for f in "$@"; do
    ((first)) || printf '%s' "$sep" >> "$out"
    first=0
    [ "$f" = - ] || cat "$f" >> "$out"
  done
}
text() { printf '%s' "$2" > "$corpus/seed-$1"; }
head_bytes() { head -c "$2" "$1"; }
case "$target" in
  fuzz_gguf|fuzz_gguf_model)
    put tiny-llama "$seeds/tiny-llama-q8_0.gguf"
    put tiny-qwen3 "$seeds/tiny-qwen3-f32.gguf"
    put tinystories "$shared/models/tinystories-656k/TinyStories-656K-Q8_0.gguf"
    if [ "$target" = fuzz_gguf ]; then put vocab-llama-spm "$shared/tokenizers/ggml-vocab-llama-spm.gguf"; fi
    ;;
  fuzz_gguf_vocab)
    put tiny-llama "$seeds/tiny-llama-q8_0.gguf"
    for v in llama-spm phi-3 gpt-2 deepseek-coder starcoder; do put "vocab-$v" "$shared/tokenizers/ggml-vocab-$v.gguf"; done
    ;;
  fuzz_safetensors)
    put tiny-qwen2 "$seeds/hf-tiny-qwen2/model.safetensors"
    put stats "$seeds/tiny-llama.stats.safetensors"
    put tinystories "$shared/models/tinystories-656k/model.safetensors"
    ;;
  fuzz_hf_checkpoint)
    d="$seeds/hf-tiny-qwen2"
    put tiny-qwen2 "$d/config.json" "$d/tokenizer.json" "$d/model.safetensors"
    d="$shared/models/tinystories-656k"
    put tinystories "$d/config.json" "$d/tokenizer.json" "$d/model.safetensors"
    ;;
  fuzz_llama2c)
    # A small legacy (version 0) checkpoint with tok512.bin's vocabulary: dim 8, 1 layer.
    python3 - "$corpus/seed-tiny-v0" <<'PY'
import struct, sys
dim, hidden, layers, heads, kv, vocab, seq = 8, 16, 1, 2, 2, 512, 16
hs = dim // heads
sizes = [vocab * dim, layers * dim, layers * dim * dim, layers * dim * kv * hs, layers * dim * kv * hs,
         layers * dim * dim, layers * dim, layers * hidden * dim, layers * dim * hidden, layers * hidden * dim,
         dim, seq * hs // 2, seq * hs // 2]
n = sum(sizes)
vals = [((i * 2654435761) % 1000) / 1000.0 - 0.5 for i in range(n)]
open(sys.argv[1], "wb").write(struct.pack("<7i", dim, hidden, layers, heads, kv, vocab, seq) + struct.pack("<%df" % n, *vals))
PY
    put stories260k-q80 "$shared/models/stories260k/stories260K_q80.bin"
    put stories260k "$shared/models/stories260k/stories260K.bin"
    ;;
  fuzz_llama2c_vocab)
    put tok512 "$shared/models/stories260k/tok512.bin"
    ;;
  fuzz_stats_safetensors)
    put tiny-llama "$seeds/tiny-llama.stats.safetensors"
    ;;
  fuzz_stats_tria|fuzz_stats_npz)
    # Independent writers of each format (/usr/bin/python3: numpy), good files and damaged ones.
    tmp="$seeds/foreign"; mkdir -p "$tmp"
    if [ "$target" = fuzz_stats_tria ]; then
      specs="tria-v1:good:v1.triattention tria-v1:shuffled:v1s.triattention tria-v1:zero_head:v1z.triattention
             tria-v2:good:v2.bin tria-v2:v1layout:v2old.bin tria-v2:scales:v2s.bin tria-v2:truncated:v2t.bin"
    else
      specs="npz:good:good.npz npz:missing_head:missing.npz npz:placeholder:placeholder.npz"
    fi
    for spec in $specs; do
      [ -f "$tmp/${spec##*:}" ] || /usr/bin/python3 "$root/tests/reference/stats_formats_ref.py" batch "${spec%:*}:$tmp/${spec##*:}"
      put "${spec##*:}" "$tmp/${spec##*:}"
    done
    ;;
  fuzz_stats_pt|fuzz_zip|fuzz_pickle)
    tmp="$seeds/pt"; mkdir -p "$tmp"
    for spec in "good:" "big:--layers 3 --heads 6 --head-dim 16" "missing_head:" "evil_global:"; do
      name=${spec%%:*} extra=${spec#*:}
      [ -f "$tmp/$name.pt" ] || python3 "$root/tests/reference/triattention_make_pt.py" "$tmp/$name.pt" \
        --mode "${name/big/good}" $extra >/dev/null
      if [ "$target" = fuzz_pickle ]; then
        python3 - "$tmp/$name.pt" "$corpus/seed-$name.pkl" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
pkl = [n for n in z.namelist() if n.endswith("data.pkl")][0]
open(sys.argv[2], "wb").write(z.read(pkl))
PY
      else
        put "$name" "$tmp/$name.pt"
      fi
    done
    ;;
  fuzz_tokenizer_json)
    put tinystories "$shared/models/tinystories-656k/tokenizer.json" "$shared/models/tinystories-656k/tokenizer_config.json"
    put bytelm "$shared/models/bytelm-2k/tokenizer.json" "$shared/models/bytelm-2k/tokenizer_config.json"
    put tiny-qwen2 "$seeds/hf-tiny-qwen2/tokenizer.json" "$seeds/hf-tiny-qwen2/tokenizer_config.json"
    ;;
  fuzz_vocab_merges)
    # Qwen2's files cut down to their first entries (the whole files are MBs).
    python3 - "$shared/tokenizers/qwen2" "$seeds/qwen2-small" <<'PY'
import json, os, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
vocab = json.load(open(os.path.join(src, "vocab.json"), encoding="utf-8"))
small = dict(sorted(vocab.items(), key=lambda kv: kv[1])[:600])
json.dump(small, open(os.path.join(dst, "vocab.json"), "w", encoding="utf-8"), ensure_ascii=False)
lines = open(os.path.join(src, "merges.txt"), encoding="utf-8").read().split("\n")
keep = [lines[0]] + [l for l in lines[1:] if l and all(p in small for p in l.split(" ")) and "".join(l.split(" ")) in small]
open(os.path.join(dst, "merges.txt"), "w", encoding="utf-8").write("\n".join(keep[:400]) + "\n")
PY
    put qwen2-small "$seeds/qwen2-small/vocab.json" "$seeds/qwen2-small/merges.txt" "$shared/tokenizers/qwen2/tokenizer_config.json"
    put qwen2-small-nocfg "$seeds/qwen2-small/vocab.json" "$seeds/qwen2-small/merges.txt"
    ;;
  fuzz_tiktoken)
    head -n 3000 "$shared/tokenizers/llama3/tokenizer.model" > "$corpus/seed-llama3-head"
    head -n 50 "$shared/tokenizers/llama3/tokenizer.model" > "$corpus/seed-llama3-50"
    ;;
  fuzz_tokenize)
    i=0
    for f in "$shared"/tokenizers/*.inp "$root"/tests/data/calibration_stories.txt; do
      for t in $(seq 0 12); do
        { printf "\\x$(printf %02x "$t")\\x0$((i % 8))"; head_bytes "$f" 2000; } > "$corpus/seed-$t-$(basename "$f")"
      done
      i=$((i + 1))
    done
    ;;
  fuzz_grammar)
    schema='{"type":"object","properties":{"name":{"type":"string","maxLength":8},"kind":{"enum":["a","b",null]},"n":{"type":"integer","minimum":-5,"maximum":120},"x":{"type":"number","exclusiveMinimum":0},"tags":{"type":"array","items":{"type":"string","pattern":"^[a-z]+\\d?$"},"minItems":1,"maxItems":3},"when":{"type":"string","format":"date-time"},"next":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"required":["name"],"$defs":{"n":{"type":"object","properties":{"v":{"const":1}}}}}'
    gbnf='root ::= value
value ::= "{" ws (pair ("," ws pair)*)? "}" | [0-9]+ | "\"" [^"]* "\""
pair ::= "\"" [a-z]+ "\":" ws value
ws ::= [ \t\n]*'
    text json "$gbnf$sep$schema"
    text unicode 'root ::= [α-ω]{1,3} ("é" | [^a-z\x00-\x1F])+ .?'"$sep"'{"type":["string","null"],"minLength":1}'
    text refs 'root ::= a{2,4}
a ::= ("x" | b)? "y"
b ::= "(" a ")"'"$sep"'{"prefixItems":[{"type":"boolean"}],"items":false}'
    text numbers 'root ::= "-"? [0-9]{1,3} ("." [0-9]+)?'"$sep"'{"anyOf":[{"type":"number","minimum":-2.75,"exclusiveMaximum":0.001},{"type":"integer","exclusiveMinimum":-40,"maximum":1234}]}'
    ;;
  fuzz_jinja)
    msgs='[{"role":"system","content":"You are helpful."},{"role":"user","content":"Hi <b>&</b>"},{"role":"assistant","content":"<think>\nhm\n</think>\n\nHello!","tool_calls":[{"type":"function","function":{"name":"f","arguments":{"x":1}}}]},{"role":"tool","content":"{\"r\":2}"},{"role":"user","content":"Bye"}]'
    extra='{"enable_thinking":false,"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}]}'
    for t in "$shared"/chat-templates/*.jinja; do
      { cat "$t"; printf '%s%s%s%s' "$sep" "$msgs" "$sep" "$extra"; } > "$corpus/seed-$(basename "$t" .jinja)"
    done
    text loop '{% for i in range(10) %}{{ i }}{% if loop.last %}!{% endif %}{% endfor %}'
    text macro '{% macro m(x, y=2) %}{{ x ~ y }}{% if x < 3 %}{{ m(x + 1) }}{% endif %}{% endmacro %}{{ m(0) }}'
    text ns '{% set ns = namespace(a=[]) %}{% for m in messages %}{% set ns.a = ns.a + [m.role|upper] %}{% endfor %}{{ ns.a|join(",") }}{{ messages|tojson(indent=2) }}'
    text filters '{{ "a,b"|split(",")|map("trim")|list|length }}{{ messages[-1]["content"][1:3]|replace("i","I")|title }}{{ {"k": 1}|items|list }}{{ "%s-%d"|format("x", 3) }}'
    ;;
  fuzz_completion_request)
    text chat '{"messages":[{"role":"user","content":"Hello"}],"max_tokens":8,"temperature":0.7,"top_p":0.9,"stream":true,"stream_options":{"include_usage":true}}'
    text completion '{"prompt":"Once upon a time","max_tokens":16,"logprobs":2,"echo":true,"stop":["\n","."],"seed":7}'
    text ids '{"prompt":[1,400,20,33],"n":2,"top_k":40,"min_p":0.05,"repeat_penalty":1.1,"ignore_eos":true}'
    text kv '{"prompt":"x","kv_policy":"snapkv","kv_budget":64,"divide_length":16,"window":8,"sink":4,"protect_prompt":true,"pruning_mode":"per_layer"}'
    text kv2 '{"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],"kv_policy":"streamingllm","kv_budget":32,"logprobs":true,"top_logprobs":3,"chat_template_kwargs":{"enable_thinking":false}}'
    text tools '{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"max_completion_tokens":4}'
    text penalties '{"messages":[{"role":"user","content":"u"}],"frequency_penalty":0.5,"presence_penalty":-0.5,"logit_bias":{"5":-100,"7":2.5},"repeat_last_n":8,"metadata":{"k":"v"},"user":"u1"}'
    # Nested values: at the server's depth limit (64) in a numeric field and in the template
    # arguments, and one level past it.
    deep() { local n=$1 s=""; for ((i = 0; i < n; ++i)); do s+="["; done; s+="1"; for ((i = 0; i < n; ++i)); do s+="]"; done; printf '%s' "$s"; }
    text deep-n "{\"prompt\":\"hi\",\"n\":$(deep 63)}"
    text deep-kwargs "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template_kwargs\":{\"a\":$(deep 61)}}"
    text too-deep "{\"prompt\":\"hi\",\"stop\":$(deep 64)}"
    ;;
  fuzz_http_request)
    # The first byte sets the piece size the parser is fed in (fuzz/fuzz_http_request.cpp).
    crlf=$'\r\n'
    body='{"prompt":"Once","max_tokens":4,"stream":true}'
    text get "@GET /v1/models HTTP/1.1${crlf}Host: x${crlf}${crlf}"
    text post "$(printf '\x07')POST /v1/completions HTTP/1.1${crlf}Content-Type: application/json${crlf}Content-Length: ${#body}${crlf}${crlf}${body}"
    text chunked "$(printf '\x03')POST /v1/chat/completions HTTP/1.1${crlf}Transfer-Encoding: chunked${crlf}${crlf}1c;ext=1${crlf}{\"messages\":[{\"role\":\"user\",${crlf}14${crlf}\"content\":\"hi\"}]}   ${crlf}0${crlf}Trailer: t${crlf}${crlf}"
    text pipelined "$(printf '\x01')GET /health HTTP/1.1${crlf}${crlf}POST /v1/completions HTTP/1.0${crlf}Connection: keep-alive${crlf}Content-Length: 2${crlf}${crlf}{}GET / HTTP/1.1${crlf}Expect: 100-continue${crlf}${crlf}"
    text smuggle "@POST / HTTP/1.1${crlf}Content-Length: 4${crlf}Transfer-Encoding: chunked${crlf}${crlf}0${crlf}${crlf}"
    deepbody="{\"prompt\":$(printf '%*s' 2000 '' | tr ' ' '[')1$(printf '%*s' 2000 '' | tr ' ' ']')}"
    text deep "@POST /v1/completions HTTP/1.1${crlf}Content-Length: ${#deepbody}${crlf}${crlf}${deepbody}"
    ;;
  *) echo "fuzz/seeds.sh: unknown target $target" >&2; exit 2 ;;
esac
exit 0
