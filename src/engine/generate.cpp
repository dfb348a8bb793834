#include "engine/generate.h"

#include "engine/generation.h"

namespace triattn {

GenerateResult generate(const Model& model, Forward& forward, Sequence& seq, std::span<const int32_t> prompt,
                        const GenerateOptions& opt, Sampler& sampler, const TextCallback& on_text) {
  Generation g(model, seq, prompt, opt, sampler, on_text);
  while (!g.done()) {
    const std::span<const int32_t> tokens = g.pending();
    const std::vector<float> logits = seq.feed(tokens, forward);
    g.fed(static_cast<int64_t>(tokens.size()), logits);
  }
  return g.result();
}

}  // namespace triattn
