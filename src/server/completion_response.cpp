#include "server/completion_response.h"

#include <algorithm>
#include <memory>

#include "server/tool_reply.h"

namespace triattn::server {

using json = nlohmann::json;

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

json chat_entry(const Tokenizer& tok, int32_t id, float logprob) {
  const std::string text = tok.token_to_bytes(id, /*render_special=*/true);
  return {{"token", text}, {"logprob", logprob}, {"bytes", bytes_of(text)}};
}

}  // namespace

size_t kept_tokens(const GenerateResult& r) {
  size_t n = 0;
  while (n < r.text_offsets.size() && r.text_offsets[n] < r.text.size()) ++n;
  return n;
}

json chat_logprobs_content(const Tokenizer& tok, std::span<const TokenLogprob> tokens) {
  json content = json::array();
  for (const TokenLogprob& t : tokens) {
    json e = chat_entry(tok, t.id, t.logprob);
    json top = json::array();
    for (const auto& [id, lp] : t.top) top.push_back(chat_entry(tok, id, lp));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return content;
}

void CompletionLogprobs::add(int32_t id, const TokenLogprob* lp, size_t text_offset) {
  tokens_.push_back(tok_.token_to_bytes(id, /*render_special=*/true));
  text_offset_.push_back(text_offset);
  if (!lp) {
    token_logprobs_.push_back(nullptr);
    top_logprobs_.push_back(nullptr);
    return;
  }
  token_logprobs_.push_back(lp->logprob);
  json top = json::object();  // token text -> logprob; two ids with one text keep the likelier
  for (const auto& [tid, l] : lp->top) {
    const std::string text = tok_.token_to_bytes(tid, true);
    if (!top.contains(text)) top[text] = l;
  }
  top_logprobs_.push_back(std::move(top));
}

void CompletionLogprobs::add_prompt(std::span<const int32_t> prompt, std::span<const TokenLogprob> prompt_logprobs) {
  size_t offset = 0;
  for (size_t i = 0; i < prompt.size(); ++i) {
    add(prompt[i], i > 0 && i - 1 < prompt_logprobs.size() ? &prompt_logprobs[i - 1] : nullptr, offset);
    offset += tok_.token_to_bytes(prompt[i]).size();
  }
}

json CompletionLogprobs::to_json() const {
  return {{"tokens", tokens_}, {"token_logprobs", token_logprobs_}, {"top_logprobs", top_logprobs_},
          {"text_offset", text_offset_}};
}

std::string api_finish_reason(const GenerateResult& r) { return r.finish_reason == "stop" ? "stop" : "length"; }

json usage_json(int64_t prompt_tokens, std::span<const GenerateResult> choices, const std::string& policy) {
  int64_t completion = 0, peak_tokens = 0, prunes = 0, reused = 0;
  size_t peak_bytes = 0;
  double scoring_ms = 0, grammar_ms = 0, recall_ms = 0;
  int64_t recalled = 0;
  size_t cold_peak = 0;
  for (const GenerateResult& r : choices) {
    recall_ms += r.stats.recall_ms;
    recalled += r.stats.recalled_rows;
    cold_peak += r.stats.kv_cold_peak_bytes;
    grammar_ms += r.stats.grammar_ms;
    completion += r.stats.generated_tokens;  // a streamed result keeps no token list
    peak_tokens = std::max(peak_tokens, r.stats.kv_peak_tokens);
    peak_bytes += r.stats.kv_peak_bytes;
    prunes += r.stats.prune_events;
    scoring_ms += r.stats.scoring_ms;
    reused = std::max(reused, r.reused_tokens);
  }
  json u = {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", prompt_tokens + completion},
          {"prompt_tokens_details", {{"cached_tokens", reused}}},
          {"kv_policy", policy},
          {"kv_peak_tokens", peak_tokens},
          {"kv_peak_bytes", peak_bytes},
          {"prune_events", prunes},
          {"scoring_ms", scoring_ms},
          // The cold tier (kv_recall): rows recalled, recall time, the cold stores' peak bytes.
          {"recalled_rows", recalled},
          {"recall_ms", recall_ms},
          {"kv_cold_peak_bytes", cold_peak},
          // Constrained decoding: its masks and grammar steps, summed over the choices (0 without).
          {"grammar_ms", grammar_ms}};
  return u;
}

json whole_choice(const ReplyContext& ctx, int index, const GenerateResult& r) {
  const CompletionRequest& req = *ctx.request;
  const size_t kept = kept_tokens(r);
  if (req.chat) {
    ReplyReader reader(ctx.split_reasoning, ctx.opens_reasoning, req.tools.get());
    ReplyReader::Out all = reader.push(r.text, true);
    const std::string& content = all.text.content;
    json calls = json::array();
    for (json& call : all.calls) {
      call.erase("index");  // only stream deltas carry it
      calls.push_back(std::move(call));
    }
    json message = {{"role", "assistant"}, {"content", content}};
    if (!calls.empty()) {
      if (content.empty()) message["content"] = nullptr;
      message["tool_calls"] = std::move(calls);
    }
    if (!all.text.reasoning.empty()) message["reasoning_content"] = all.text.reasoning;
    json lp = nullptr;
    if (req.logprobs >= 0)
      lp = {{"content", chat_logprobs_content(*ctx.tok, std::span(r.logprobs).first(std::min(kept, r.logprobs.size())))}};
    // A reply cut by max_tokens says so even after calls (its last call may be cut too).
    const std::string reason = api_finish_reason(r);
    const std::string finish = message.contains("tool_calls") && reason != "length" ? "tool_calls" : reason;
    return {{"index", index}, {"message", message}, {"logprobs", lp}, {"finish_reason", finish}};
  }
  const std::string prefix = req.echo ? req.prompt_text : "";
  json lp = nullptr;
  if (req.logprobs >= 0) {
    CompletionLogprobs c(*ctx.tok);
    if (req.echo) c.add_prompt(req.prompt, r.prompt_logprobs);
    for (size_t i = 0; i < kept && i < r.logprobs.size(); ++i)
      c.add(r.tokens[i], &r.logprobs[i], prefix.size() + r.text_offsets[i]);
    lp = c.to_json();
  }
  return {{"index", index}, {"text", prefix + r.text}, {"logprobs", lp}, {"finish_reason", api_finish_reason(r)}};
}

json stream_choice(const ReplyContext& ctx, int index, const ReasoningSplit::Out& text, const json& logprobs,
                   const json& finish, bool first) {
  if (!ctx.request->chat)
    return {{"index", index}, {"text", text.content}, {"logprobs", logprobs}, {"finish_reason", finish}};
  json delta = json::object();
  if (first) delta["role"] = "assistant";
  if (!text.reasoning.empty()) delta["reasoning_content"] = text.reasoning;
  // No empty pieces (clients of llama-server check): the role chunk's content is null, as
  // llama-server sends it, and the finishing chunk has none, as both it and OpenAI send it.
  if (!text.content.empty()) delta["content"] = text.content;
  else if (first && text.reasoning.empty()) delta["content"] = nullptr;
  return {{"index", index}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", finish}};
}

}  // namespace triattn::server
