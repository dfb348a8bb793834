#include "engine/generate.h"

#include <chrono>

#include "core/error.h"

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
  seq.set_prompt_length(static_cast<int64_t>(prompt.size()));

  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = seq.feed(prompt, forward);
  seq.stats().prefill_seconds += seconds_since(t0);
  seq.stats().prompt_tokens += static_cast<int64_t>(prompt.size());

  // The dummy-prefix space is dropped only for a token right after BOS (an empty prompt).
  StreamDecoder decoder(tok, prompt.back() == tok.bos_id());
  r.finish_reason = "length";
  t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < opt.n_predict; ++i) {
    const int32_t id = sampler.sample(logits, seq.history());
    r.tokens.push_back(id);
    ++seq.stats().generated_tokens;
    if (opt.stop_at_eog && tok.is_eog(id)) {
      r.finish_reason = "stop";
      break;
    }
    const std::string piece = decoder.push(id);
    r.text += piece;
    if (on_text && !piece.empty() && !on_text(piece)) {
      r.finish_reason = "callback";
      break;
    }
    if (i + 1 == opt.n_predict) break;  // the last token needs no forward step
    const int32_t next[1] = {id};
    logits = seq.feed(next, forward);
  }
  const std::string rest = decoder.flush();
  r.text += rest;
  if (on_text && !rest.empty()) on_text(rest);
  seq.stats().decode_seconds += seconds_since(t0);
  seq.update_stats();
  r.stats = seq.stats();
  return r;
}

}  // namespace triattn
