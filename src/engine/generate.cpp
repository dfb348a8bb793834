#include "engine/generate.h"

#include <chrono>

#include "core/error.h"
#include "engine/stop_strings.h"

namespace triattn {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

GenerateResult generate(const Model& model, Forward& forward, Sequence& seq, std::span<const int32_t> prompt,
                        const GenerateOptions& opt, Sampler& sampler, const TextCallback& on_text) {
  if (prompt.empty()) fail("generate: the prompt is empty (nothing to condition on)");
  const Tokenizer& tok = model.tokenizer();
  GenerateResult r;
  if (seq.history().empty()) seq.set_prompt_length(static_cast<int64_t>(prompt.size()));

  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = seq.feed(prompt, forward);
  seq.stats().prefill_seconds += seconds_since(t0);
  seq.stats().prompt_tokens += static_cast<int64_t>(prompt.size());

  // The dummy-prefix space is dropped only for a token right after BOS (an empty prompt).
  StreamDecoder decoder(tok, prompt.back() == tok.bos_id());
  // An end-of-generation token's text spelled out by ordinary tokens ends the text too: small
  // models trained on text holding "<|end_story|>" write it before the real token, and a
  // reply must not show it.
  std::vector<std::string> stop_texts = opt.stop;
  if (opt.stop_at_eog)
    for (int32_t id : tok.eog_ids()) stop_texts.push_back(tok.token_text(id));
  StopStrings stops(std::move(stop_texts));
  bool quiet = false;  // the callback asked to stop: it gets no more text
  // Text goes through the stop strings, then to the result and the callback. False: stop.
  auto emit = [&](const StopStrings::Step& step) {
    r.text += step.text;
    if (step.stopped) r.finish_reason = "stop";
    if (!quiet && on_text && !step.text.empty() && !on_text(step.text)) {
      quiet = true;
      if (r.finish_reason.empty()) r.finish_reason = "callback";
    }
    return r.finish_reason.empty();
  };
  t0 = std::chrono::steady_clock::now();
  auto stop_at_context = [&](int64_t generated) {
    seq.notice("generation stopped at the context limit (" + std::to_string(seq.context_limit()) + " tokens) after " +
               std::to_string(generated) + " tokens");
    r.finish_reason = "length";
  };
  for (int64_t i = 0; i < opt.n_predict; ++i) {
    if (seq.room() < 1) {  // only when the prompt filled the context exactly
      stop_at_context(i);
      break;
    }
    const int32_t id = sampler.sample(logits, seq.history());
    r.tokens.push_back(id);
    ++seq.stats().generated_tokens;
    if (opt.stop_at_eog && tok.is_eog(id)) {  // not text: never decoded
      r.finish_reason = "stop";
      break;
    }
    // Another token may follow only while the context has room for this one and the next.
    const bool more = i + 1 < opt.n_predict && seq.room() > 1;
    // A token after which nothing is sampled needs no forward step, unless the caller keeps
    // the sequence going.
    if (more || opt.feed_last) {
      const int32_t next[1] = {id};
      logits = seq.feed(next, forward);
    }
    if (!emit(stops.push(decoder.push(id)))) break;
    if (!more) {
      if (i + 1 < opt.n_predict) stop_at_context(i + 1);
      break;
    }
  }
  // What the decoder and the stop strings still hold is text, unless a stop string ended it.
  const bool cut = r.finish_reason == "stop" && stops.stopped();
  if (!cut) {
    StopStrings::Step rest = stops.push(decoder.flush());
    if (!rest.stopped) rest.text += stops.flush();
    const std::string reason = r.finish_reason;
    emit(rest);
    if (!reason.empty() && !rest.stopped) r.finish_reason = reason;
  }
  if (r.finish_reason.empty()) r.finish_reason = "length";
  seq.stats().decode_seconds += seconds_since(t0);
  seq.update_stats();
  r.stats = seq.stats();
  return r;
}

}  // namespace triattn
