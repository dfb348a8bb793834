#include "server/chat_page.h"

namespace triattn::server {

std::string_view chat_page_html() {
  static constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>triattn chat</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; display: flex; flex-direction: column; height: 100vh; }
  header { padding: 8px 12px; background: #223; color: #eee; display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
  header label { font-size: 13px; }
  header input, header select { font: inherit; font-size: 13px; }
  #log { flex: 1; overflow-y: auto; padding: 12px; background: #f6f6f8; }
  .msg { max-width: 52em; margin: 0 0 10px; padding: 8px 12px; border-radius: 8px; white-space: pre-wrap; }
  .user { background: #dde7ff; margin-left: auto; }
  .assistant { background: #fff; border: 1px solid #ddd; }
  .reasoning { color: #666; font-style: italic; border-left: 3px solid #bbb; padding-left: 8px; margin-bottom: 6px; }
  .reasoning:empty { display: none; }
  .figures { font-size: 12px; color: #667; margin-top: 4px; }
  .error { background: #fde; border: 1px solid #d99; }
  form { display: flex; gap: 8px; padding: 10px; border-top: 1px solid #ccc; }
  textarea { flex: 1; font: inherit; min-height: 3em; }
</style>
</head>
<body>
<header>
  <strong>triattn</strong>
  <label>KV policy <select id="policy"><option value="">server default</option><option>full</option><option>triattention</option></select></label>
  <label>budget <input id="budget" type="number" min="1" placeholder="default" style="width:6em"></label>
  <label>max tokens <input id="maxtok" type="number" min="1" value="256" style="width:5em"></label>
  <label>API key <input id="key" type="password" style="width:8em"></label>
  <button id="reset" type="button">New chat</button>
</header>
<div id="log"></div>
<form id="form">
  <textarea id="input" placeholder="Type a message; Enter sends, Shift+Enter adds a line"></textarea>
  <button id="send" type="submit">Send</button>
</form>
<script>
const log = document.getElementById("log"), input = document.getElementById("input");
let messages = [];

function bubble(cls) {
  const d = document.createElement("div");
  d.className = "msg " + cls;
  log.appendChild(d);
  return d;
}

// gpt-oss's harmony: "<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>...";
// the analysis channel is the reasoning, the others the answer.
function split_harmony(text) {
  let reasoning = "", answer = "";
  for (const part of text.split("<|channel|>").slice(1)) {
    const at = part.indexOf("<|message|>");
    if (at < 0) continue;  // its header is still streaming
    const name = part.slice(0, at).split(/[ <]/)[0];
    const body = part.slice(at + 11).split(/<\|(?:end|return|call)\|>/)[0];
    if (name === "analysis") reasoning += body; else answer += body;
  }
  return [reasoning, answer];
}

// Splits "<think>...</think>answer" so the reasoning shows apart (also while it streams).
function split(text) {
  if (text.startsWith("<|channel|>")) return split_harmony(text);
  const open = text.indexOf("<think>");
  if (open < 0) return ["", text];
  const close = text.indexOf("</think>", open);
  if (close < 0) return [text.slice(open + 7), text.slice(0, open)];
  return [text.slice(open + 7, close), text.slice(0, open) + text.slice(close + 8)];
}

async function send(text) {
  messages.push({ role: "user", content: text });
  bubble("user").textContent = text;
  const box = bubble("assistant");
  const reasoning = document.createElement("div"), answer = document.createElement("div"),
        figures = document.createElement("div");
  reasoning.className = "reasoning"; answer.className = "answer"; figures.className = "figures";
  box.append(reasoning, answer, figures);
  const body = { messages, stream: true, stream_options: { include_usage: true },
                 max_tokens: Number(document.getElementById("maxtok").value) || 256 };
  const policy = document.getElementById("policy").value, budget = document.getElementById("budget").value;
  if (policy) body.kv_policy = policy;
  if (budget) body.kv_budget = Number(budget);
  const headers = { "Content-Type": "application/json" };
  const key = document.getElementById("key").value;
  if (key) headers.Authorization = "Bearer " + key;
  let reply = "";
  try {
    const res = await fetch("/v1/chat/completions", { method: "POST", headers, body: JSON.stringify(body) });
    if (!res.ok) throw new Error((await res.json()).error.message);
    const reader = res.body.getReader(), dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, nl); buf = buf.slice(nl + 2);
        if (!event.startsWith("data: ")) continue;
        const data = event.slice(6);
        if (data === "[DONE]") continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        for (const c of j.choices) reply += c.delta.content || "";
        const [r, a] = split(reply);
        reasoning.textContent = r; answer.textContent = a;
        if (j.usage) {
          const u = j.usage;
          figures.textContent = `${u.completion_tokens} tokens | KV ${u.kv_policy}: peak ${u.kv_peak_tokens} tok/head, ` +
                                `${(u.kv_peak_bytes / 1048576).toFixed(2)} MiB, ${u.prune_events} prune events` +
                                (u.prompt_tokens_details && u.prompt_tokens_details.cached_tokens
                                   ? ` | ${u.prompt_tokens_details.cached_tokens} prompt tokens reused` : "");
        }
        log.scrollTop = log.scrollHeight;
      }
    }
    messages.push({ role: "assistant", content: reply });
  } catch (e) {
    box.classList.add("error");
    figures.textContent = "error: " + e.message;
    messages.pop();
  }
}

document.getElementById("form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  send(text);
});
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); document.getElementById("form").requestSubmit(); }
});
document.getElementById("reset").addEventListener("click", () => { messages = []; log.textContent = ""; });
</script>
</body>
</html>
)HTML";
  return kPage;
}

}  // namespace triattn::server
