#include "engine/generate.h"

#include <algorithm>

#include "engine/generation.h"
#include "engine/step.h"

namespace triattn {

GenerateResult generate(const Model& model, Forward& forward, Sequence& seq, std::span<const int32_t> prompt,
                        const GenerateOptions& opt, Sampler& sampler, const TextCallback& on_text) {
  // A batch of one: the scheduler's step for a single sequence (Generation checked the whole
  // prompt against the context rule before anything is fed).
  Generation g(model, seq, prompt, opt, sampler, on_text);
  EngineStep step(forward);
  while (!g.done()) {
    const std::span<const int32_t> pending = g.pending();
    StepItem item;
    item.seq = &seq;
    item.tokens = pending.first(std::min(pending.size(), static_cast<size_t>(seq.max_step())));
    item.logits = g.logits_for(static_cast<int64_t>(item.tokens.size()));
    step.run(std::span<StepItem>(&item, 1));
    if (item.error) std::rethrow_exception(item.error);
    g.fed(static_cast<int64_t>(item.tokens.size()), step.logits(0));
  }
  return g.result();
}

GenerateResult generate_fresh(const Model& model, Forward& forward, const PolicyFactory& policies,
                              std::span<const int32_t> prompt, int64_t n, const SamplerParams& sampling,
                              NoticeFn notices) {
  Sequence seq(model, policies, std::move(notices));
  Sampler sampler(sampling);
  GenerateOptions opt;
  opt.n_predict = n;
  opt.stop_at_eog = false;
  return generate(model, forward, seq, prompt, opt, sampler);
}

}  // namespace triattn
