#pragma once
// The generation loop for one sequence: prefill the prompt, then sample and feed one token
// at a time until n_predict tokens, an end-of-generation token, or the callback says stop.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/run_stats.h"
#include "engine/sampler.h"
#include "engine/sequence.h"

namespace triattn {

struct GenerateOptions {
  int64_t n_predict = 128;
  bool stop_at_eog = true;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids (an end-of-generation token included)
  std::string text;             // their decoded text (end-of-generation token not rendered)
  std::string finish_reason;    // "length", "stop" (end-of-generation) or "callback"
  RunStats stats;
};

// on_text receives decoded text as it becomes complete UTF-8; returning false stops.
using TextCallback = std::function<bool(const std::string& text)>;

GenerateResult generate(const Model& model, Forward& forward, Sequence& seq, std::span<const int32_t> prompt,
                        const GenerateOptions& opt, Sampler& sampler, const TextCallback& on_text = nullptr);

}  // namespace triattn
