#include "server/completion_reply.h"

#include "server/api_error.h"
#include "server/http_reply.h"

namespace triattn::server {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

void attach_callbacks(Request& r, const std::shared_ptr<Exchange>& ex, ServerMetrics& metrics, bool keep_logprobs) {
  r.on_text = [ex](int c, const std::string& t) {
    {
      std::lock_guard<std::mutex> lock(ex->mu);
      ChoiceState& s = ex->choices[static_cast<size_t>(c)];
      s.text += t;
      s.text_bytes += t.size();
    }
    ex->wake();
    return !ex->gone.load();
  };
  r.on_token = [ex, &metrics, keep_logprobs](int c, const TokenEvent& t) {
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> lock(ex->mu);
    ChoiceState& s = ex->choices[static_cast<size_t>(c)];
    if (!ex->first_token_seen) {
      ex->first_token_seen = true;
      metrics.first_token(std::chrono::duration<double>(now - ex->arrival).count());
    }
    if (s.last_token) metrics.inter_token(std::chrono::duration<double>(now - *s.last_token).count());
    s.last_token = now;
    metrics.generated(1);
    if (t.mask_seconds >= 0) metrics.grammar_mask(t.mask_seconds);
    if (keep_logprobs && t.logprob) s.tokens.push_back({t.id, t.text_offset, *t.logprob});
  };
  r.on_done = [ex, &metrics](int c, const GenerateResult& g) {
    metrics.finished(g);
    {
      std::lock_guard<std::mutex> lock(ex->mu);
      ChoiceState& s = ex->choices[static_cast<size_t>(c)];
      s.result = g;
      s.done = true;
      ++ex->done_count;
    }
    ex->wake();
  };
}

json ReplyEnvelope::wrap(json choices, bool chunk) const {
  const char* object = chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  json out{{"id", id},     {"object", object}, {"created", created}, {"model", model},
           {"seed", seed}, {"choices", std::move(choices)}};
  if (!metadata.is_null() && !chunk) out["metadata"] = metadata;
  return out;
}

namespace {

std::unique_ptr<http::Response> json_response(int status, const json& body) {
  auto r = std::make_unique<http::Response>();
  r->status = status;
  r->body = json_text(body);
  return r;
}

std::vector<GenerateResult> results_locked(const Exchange& ex) {
  std::vector<GenerateResult> r;
  for (const ChoiceState& c : ex.choices) r.push_back(c.result);
  return r;
}

}  // namespace

// ---------------------------------------------------------------- whole replies

std::unique_ptr<http::Response> WholeReply::poll() {
  std::lock_guard<std::mutex> lock(p_.ex->mu);
  if (!p_.ex->all_done()) {
    if (!stopping_) return nullptr;
    p_.metrics->request(503);
    return json_response(503, ApiError(503, "the server is shutting down").body());
  }
  json choices = json::array();
  for (size_t c = 0; c < p_.ex->choices.size(); ++c) {
    const GenerateResult& g = p_.ex->choices[c].result;
    if (g.finish_reason == "error") {
      p_.metrics->request(500);
      return json_response(500, ApiError(500, g.error).body());
    }
    if (g.finish_reason == "timeout") {
      p_.metrics->request(504);
      return json_response(504, ApiError(504, g.error, "", "timeout").body());
    }
    choices.push_back(whole_choice(p_.ctx, static_cast<int>(c), g));
  }
  json out = p_.envelope.wrap(std::move(choices), false);
  out["usage"] = usage_json(static_cast<int64_t>(p_.request->prompt.size()), results_locked(*p_.ex), p_.request->kv.policy);
  p_.metrics->request(200);
  return json_response(200, out);
}

void WholeReply::stop(http::BodyStream::Stop why) {
  if (why == http::BodyStream::Stop::ClientGone) {
    p_.ex->gone = true;
    p_.metrics->request(499);  // nginx's "client closed request": counted, never sent
  }
  stopping_ = true;
  p_.scheduler->cancel(p_.id);
}

// ---------------------------------------------------------------- streams

StreamReply::StreamReply(ReplyParts parts) : p_(std::move(parts)), sent_(static_cast<size_t>(p_.request->n)) {
  const CompletionRequest& rq = *p_.request;
  for (Sent& s : sent_) {
    s.reader = std::make_unique<ReplyReader>(p_.ctx.split_reasoning, p_.ctx.opens_reasoning,
                                             rq.chat ? rq.tools.get() : nullptr);
  }
}

void StreamReply::stop(Stop why) {
  if (why == Stop::ClientGone) {
    p_.ex->gone = true;
    if (!ended_) p_.metrics->request(499);  // cut off before its end
    ended_ = true;                          // nothing more is written
  }
  stopping_ = true;
  p_.scheduler->cancel(p_.id);
}

bool StreamReply::pull(std::string& out) {
  if (ended_) return false;
  const CompletionRequest& rq = *p_.request;
  auto event = [&](json choice) { out += sse_event(p_.envelope.wrap(json::array({std::move(choice)}), true)); };
  if (!head_sent_) {
    // Chat begins each choice with its role; completions with echo begin with the prompt.
    head_sent_ = true;
    for (int c = 0; c < rq.n; ++c) {
      if (rq.chat) {
        event(stream_choice(p_.ctx, c, {}, nullptr, nullptr, true));
        sent_[static_cast<size_t>(c)].first = false;
      } else if (rq.echo) {
        event(stream_choice(p_.ctx, c, {"", rq.prompt_text}, nullptr, nullptr, true));
      }
    }
  }
  const size_t prefix = rq.echo ? rq.prompt_text.size() : 0;
  std::vector<json> choices;
  bool all_done = false;
  std::string error;
  int error_status = 500;
  {
    std::lock_guard<std::mutex> lock(p_.ex->mu);
    all_done = p_.ex->all_done();
    for (size_t c = 0; c < p_.ex->choices.size(); ++c) {
      ChoiceState& st = p_.ex->choices[c];
      Sent& s = sent_[c];
      if (s.finished) continue;
      std::string text;
      text.swap(st.text);
      if (st.done && (st.result.finish_reason == "error" || st.result.finish_reason == "timeout")) {
        error = st.result.error;
        error_status = st.result.finish_reason == "timeout" ? 504 : 500;
      }
      ReplyReader::Out read = s.reader->push(text, st.done);
      const ReasoningSplit::Out& piece = read.text;
      json& calls = read.calls;
      // Log-probabilities of the tokens whose text has now gone out; they are dropped once sent.
      json lp = nullptr;
      if (rq.logprobs >= 0) {
        size_t end = 0;
        while (end < st.tokens.size() && st.tokens[end].text_offset < st.text_bytes) ++end;
        if (end > 0) {
          if (rq.chat) {
            std::vector<TokenLogprob> v;
            for (size_t i = 0; i < end; ++i) v.push_back(st.tokens[i].logprob);
            lp = {{"content", chat_logprobs_content(*p_.ctx.tok, v)}};
          } else {
            CompletionLogprobs cl(*p_.ctx.tok);
            for (size_t i = 0; i < end; ++i)
              cl.add(st.tokens[i].id, &st.tokens[i].logprob, prefix + st.tokens[i].text_offset);
            lp = cl.to_json();
          }
          st.tokens.erase(st.tokens.begin(), st.tokens.begin() + static_cast<std::ptrdiff_t>(end));
        }
        if (st.done) st.tokens.clear();  // past the kept text (a stop string, an end token)
      }
      if (!piece.reasoning.empty() || !piece.content.empty() || !lp.is_null()) {
        choices.push_back(stream_choice(p_.ctx, static_cast<int>(c), piece, lp, nullptr, s.first));
        s.first = false;
      }
      for (const json& call : calls)
        for (json& d : ToolCallReader::stream_deltas(call))
          choices.push_back({{"index", c}, {"delta", {{"tool_calls", json::array({std::move(d)})}}}, {"logprobs", nullptr},
                             {"finish_reason", nullptr}});
      if (st.done && error.empty()) {
        // A reply cut by max_tokens says so even after calls (its last call may be cut too).
        const std::string reason = api_finish_reason(st.result);
        const std::string finish = s.reader->calls() > 0 && reason != "length" ? "tool_calls" : reason;
        choices.push_back(stream_choice(p_.ctx, static_cast<int>(c), {}, nullptr, finish, s.first));
        s.first = false;
        s.finished = true;
      }
    }
  }
  for (json& c : choices) event(std::move(c));
  auto close_with_error = [&](const std::string& message, int status) {
    p_.scheduler->cancel(p_.id);  // the other choices are for nobody now
    const ApiError e = status == 504 ? ApiError(504, message, "", "timeout") : ApiError(status, message);
    out += sse_event(e.body());
    out += "data: [DONE]\n\n";
    p_.metrics->request(status);
    ended_ = true;
    return false;
  };
  if (!error.empty()) return close_with_error(error, error_status);
  if (!all_done) {
    if (stopping_) return close_with_error("the server is shutting down", 503);
    return true;
  }
  if (rq.include_usage) {
    std::vector<GenerateResult> all;
    {
      std::lock_guard<std::mutex> lock(p_.ex->mu);
      all = results_locked(*p_.ex);
    }
    json u = p_.envelope.wrap(json::array(), true);
    u["usage"] = usage_json(static_cast<int64_t>(rq.prompt.size()), all, rq.kv.policy);
    out += sse_event(u);
  }
  out += "data: [DONE]\n\n";
  p_.metrics->request(200);
  ended_ = true;
  return false;
}

}  // namespace triattn::server
