// POST /v1/completions and /v1/chat/completions: parse, queue on the scheduler, then wait for
// the choices (whole reply) or stream them as server-sent events. The HTTP thread never runs
// the model; the scheduler's callbacks (inference thread) fill the Exchange it waits on.
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <optional>

#include "core/error.h"
#include "server/api_error.h"
#include "server/completion_response.h"
#include "server/http_reply.h"
#include "server/server.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A token as the stream needs it: where its text begins, and its log-probabilities.
struct StreamToken {
  int32_t id;
  size_t text_offset;
  std::optional<TokenLogprob> logprob;
};

struct ChoiceState {
  std::string text;                 // produced, not yet sent
  std::vector<StreamToken> tokens;  // every sampled token (the stream sends their logprobs)
  bool done = false;
  GenerateResult result;
  std::optional<Clock::time_point> last_token;
};

// What one request's HTTP handler and the inference thread share.
struct Exchange {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ChoiceState> choices;
  int done_count = 0;
  bool first_token_seen = false;
  Clock::time_point arrival = Clock::now();
  std::atomic<bool> gone{false};            // the client went away: stop generating
  std::shared_ptr<PolicyFactory> policies;  // the request's KV settings, alive until done
  bool all_done() const { return done_count == static_cast<int>(choices.size()); }
};

// What the stream has sent of one choice.
struct ChoiceSent {
  size_t bytes = 0;   // text bytes
  size_t tokens = 0;  // tokens whose log-probabilities went out
  bool first = true;  // no chunk yet (chat: the first carries the role)
  bool finished = false;
  std::unique_ptr<ReasoningSplit> split;
};

json error_body(const std::string& message) { return ApiError(500, message).body(); }

}  // namespace

void Server::handle_completion(const httplib::Request& req, httplib::Response& res, bool chat) {
  auto parsed = std::make_shared<CompletionRequest>();
  auto ex = std::make_shared<Exchange>();
  uint64_t id = 0;
  try {
    if (stopping_) throw ApiError(503, "the server is shutting down");
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::exception& e) {
      throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
    }
    *parsed = parse_completion_request(body, chat, *model_, chat_prompt_, options_.defaults);
    try {
      ex->policies = std::make_shared<PolicyFactory>(*model_, parsed->kv);
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "kv_policy");
    }
    ex->choices.resize(static_cast<size_t>(parsed->n));
    Request r;
    r.prompt = parsed->prompt;
    r.options = parsed->options;
    r.sampling = parsed->sampling;
    r.n = parsed->n;
    r.policies = ex->policies.get();
    r.on_text = [ex](int c, const std::string& t) {
      {
        std::lock_guard<std::mutex> lock(ex->mu);
        ex->choices[static_cast<size_t>(c)].text += t;
      }
      ex->cv.notify_all();
      return !ex->gone.load();
    };
    r.on_token = [ex, this](int c, const TokenEvent& t) {
      const Clock::time_point now = Clock::now();
      std::lock_guard<std::mutex> lock(ex->mu);
      ChoiceState& s = ex->choices[static_cast<size_t>(c)];
      if (!ex->first_token_seen) {
        ex->first_token_seen = true;
        metrics_.first_token(std::chrono::duration<double>(now - ex->arrival).count());
      }
      if (s.last_token) metrics_.inter_token(std::chrono::duration<double>(now - *s.last_token).count());
      s.last_token = now;
      s.tokens.push_back({t.id, t.text_offset, t.logprob ? std::optional<TokenLogprob>(*t.logprob) : std::nullopt});
    };
    r.on_done = [ex, this](int c, const GenerateResult& g) {
      metrics_.finished(g);
      {
        std::lock_guard<std::mutex> lock(ex->mu);
        ChoiceState& s = ex->choices[static_cast<size_t>(c)];
        s.result = g;
        s.done = true;
        ++ex->done_count;
      }
      ex->cv.notify_all();
    };
    SubmitResult s;
    try {
      s = scheduler_.submit(std::move(r));
    } catch (const Error& e) {
      throw ApiError(400, e.what());
    }
    if (s.status == SubmitResult::Status::TooLarge) throw ApiError(400, s.reason, "max_tokens");
    if (s.status == SubmitResult::Status::QueueFull) {
      res.set_header("Retry-After", "1");
      throw ApiError(503, s.reason);
    }
    id = s.id;
    metrics_.prompt(static_cast<int64_t>(parsed->prompt.size()));
    work_cv_.notify_all();
  } catch (const ApiError& e) {
    metrics_.request(e.status);
    send_json(res, e.status, e.body());
    return;
  }

  const std::string rid = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(id);
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  const std::string model_name = model_->config().name;
  ReplyContext ctx;
  ctx.tok = &model_->tokenizer();
  ctx.request = parsed.get();
  ctx.split_reasoning = chat && options_.split_reasoning;
  ctx.opens_reasoning = ReasoningSplit::prompt_opens_reasoning(parsed->prompt_text);
  auto envelope = [=](json choices) {
    return json{{"id", rid}, {"object", chat ? "chat.completion.chunk" : "text_completion"}, {"created", created},
                {"model", model_name}, {"choices", std::move(choices)}};
  };
  auto results = [ex] {
    std::vector<GenerateResult> r;
    for (const ChoiceState& c : ex->choices) r.push_back(c.result);
    return r;
  };

  if (!parsed->stream) {
    std::unique_lock<std::mutex> lock(ex->mu);
    while (!ex->all_done() && !stopping_) ex->cv.wait_for(lock, std::chrono::milliseconds(100));
    if (!ex->all_done()) {
      scheduler_.cancel(id);
      metrics_.request(503);
      send_json(res, 503, ApiError(503, "the server is shutting down").body());
      return;
    }
    json choices = json::array();
    for (size_t c = 0; c < ex->choices.size(); ++c) {
      const GenerateResult& g = ex->choices[c].result;
      if (g.finish_reason == "error") {
        metrics_.request(500);
        send_json(res, 500, error_body(g.error));
        return;
      }
      choices.push_back(whole_choice(ctx, static_cast<int>(c), g));
    }
    json out = envelope(std::move(choices));
    out["object"] = chat ? "chat.completion" : "text_completion";
    const std::vector<GenerateResult> all = results();
    out["usage"] = usage_json(static_cast<int64_t>(parsed->prompt.size()), all, parsed->kv.policy);
    metrics_.request(200);
    send_json(res, 200, out);
    return;
  }

  metrics_.request(200);
  auto sent = std::make_shared<std::vector<ChoiceSent>>(static_cast<size_t>(parsed->n));
  for (ChoiceSent& s : *sent) s.split = std::make_unique<ReasoningSplit>(ctx.split_reasoning, ctx.opens_reasoning);
  auto echoed = std::make_shared<bool>(!parsed->echo);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, ex, id, parsed, ctx, envelope, results, sent, echoed](size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& s) {
          if (ex->gone) return false;
          if (!sink.is_writable() || !sink.write(s.data(), s.size())) {
            ex->gone = true;  // the client went away: the generation stops at the next token
            scheduler_.cancel(id);
            return false;
          }
          return true;
        };
        const CompletionRequest& rq = *parsed;
        const size_t prefix = rq.echo ? rq.prompt_text.size() : 0;
        if (!*echoed) {  // completions with echo: the prompt comes first, in every choice
          *echoed = true;
          for (int c = 0; c < rq.n; ++c) {
            if (!write(sse_event(envelope(json::array({stream_choice(ctx, c, {"", rq.prompt_text}, nullptr, nullptr, true)})))))
              return false;
            (*sent)[static_cast<size_t>(c)].first = false;
          }
        }
        // What the choices produced since the last call (waiting a little for something).
        json choices = json::array();
        bool all_done = false;
        std::string error;
        {
          std::unique_lock<std::mutex> lock(ex->mu);
          ex->cv.wait_for(lock, std::chrono::milliseconds(100), [&] {
            if (ex->all_done()) return true;
            for (const ChoiceState& c : ex->choices)
              if (!c.text.empty()) return true;
            return false;
          });
          all_done = ex->all_done();
          for (size_t c = 0; c < ex->choices.size(); ++c) {
            ChoiceState& st = ex->choices[c];
            ChoiceSent& s = (*sent)[c];
            if (s.finished) continue;
            std::string text;
            text.swap(st.text);
            if (st.done && st.result.finish_reason == "error") error = st.result.error;
            ReasoningSplit::Out out = s.split->push(text);
            s.bytes += text.size();
            if (st.done) {
              const ReasoningSplit::Out rest = s.split->flush();
              out.reasoning += rest.reasoning;
              out.content += rest.content;
            }
            // Log-probabilities of the tokens whose text has now gone out.
            json lp = nullptr;
            if (rq.logprobs >= 0) {
              const size_t limit = st.done ? st.result.text.size() : s.bytes;
              size_t end = s.tokens;
              while (end < st.tokens.size() && st.tokens[end].text_offset < limit && st.tokens[end].logprob) ++end;
              if (end > s.tokens) {
                if (rq.chat) {
                  std::vector<TokenLogprob> v;
                  for (size_t i = s.tokens; i < end; ++i) v.push_back(*st.tokens[i].logprob);
                  lp = {{"content", chat_logprobs_content(*ctx.tok, v)}};
                } else {
                  CompletionLogprobs cl(*ctx.tok);
                  for (size_t i = s.tokens; i < end; ++i)
                    cl.add(st.tokens[i].id, &*st.tokens[i].logprob, prefix + st.tokens[i].text_offset);
                  lp = cl.to_json();
                }
                s.tokens = end;
              }
            }
            if (!out.reasoning.empty() || !out.content.empty() || !lp.is_null()) {
              choices.push_back(stream_choice(ctx, static_cast<int>(c), out, lp, nullptr, s.first));
              s.first = false;
            }
            if (st.done && st.result.finish_reason != "error") {
              choices.push_back(stream_choice(ctx, static_cast<int>(c), {}, nullptr, api_finish_reason(st.result), s.first));
              s.first = false;
              s.finished = true;
            }
          }
        }
        // One choice per event, as OpenAI streams them.
        for (json& c : choices)
          if (!write(sse_event(envelope(json::array({std::move(c)}))))) return false;
        if (!error.empty()) {
          scheduler_.cancel(id);  // the other choices are for nobody now
          write(sse_event(error_body(error)));
          write("data: [DONE]\n\n");
          sink.done();
          return true;
        }
        if (stopping_ && !all_done) {
          scheduler_.cancel(id);
          write(sse_event(error_body("the server is shutting down")));
          sink.done();
          return true;
        }
        if (!all_done) {  // called again after the wait; a closed socket ends the generation
          if (sink.is_writable()) return true;
          ex->gone = true;
          scheduler_.cancel(id);
          return false;
        }
        if (rq.include_usage) {
          json u = envelope(json::array());
          std::vector<GenerateResult> all;
          {
            std::lock_guard<std::mutex> lock(ex->mu);
            all = results();
          }
          u["usage"] = usage_json(static_cast<int64_t>(rq.prompt.size()), all, rq.kv.policy);
          if (!write(sse_event(u))) return false;
        }
        write("data: [DONE]\n\n");
        sink.done();
        return true;
      },
      [this, ex, id](bool) {
        // The response is over (sent, or the connection dropped): a generation still running
        // is for nobody.
        std::lock_guard<std::mutex> lock(ex->mu);
        if (!ex->all_done()) {
          ex->gone = true;
          scheduler_.cancel(id);
        }
      });
}

}  // namespace triattn::server
