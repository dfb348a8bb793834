#pragma once
// The generation loop for one sequence: prefill the prompt, then sample and feed one token
// at a time until n_predict tokens, an end-of-generation token, a stop string, the context
// limit, or the callback says stop. Every frontend that generates (generate, chat) runs it.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/logprobs.h"
#include "grammar/token_mask.h"
#include "engine/run_stats.h"
#include "engine/sampler.h"
#include "engine/thinking_budget.h"
#include "engine/sequence.h"
#include "model/forward.h"

namespace triattn {

struct GenerateOptions {
  int64_t n_predict = 128;
  // End at an end-of-generation token, and at its text written out by ordinary tokens.
  bool stop_at_eog = true;
  // Generation ends before the first occurrence of any of these in the text.
  std::vector<std::string> stop;
  // Feed every generated token, the last one too, so the cache holds the whole reply and a
  // conversation can continue from it (chat). Otherwise the last token is not fed.
  bool feed_last = false;
  // >= 0: record each generated token's log-probability and this many most likely
  // alternatives (GenerateResult::logprobs); -1: none.
  int logprobs = -1;
  // >= 0: the same for every prompt token after the first (GenerateResult::prompt_logprobs;
  // the prefill then keeps the logits of every position, not only the last); -1: none.
  int prompt_logprobs = -1;
  // false: the text, token ids, offsets and log-probabilities go to the callbacks only and
  // the result keeps none of them (its finish reason and figures are still set), so a
  // generation streamed for hours holds nothing per token.
  bool keep_output = true;
  // Constrained decoding: every sampled token must keep this grammar alive (the sampler sees
  // only the tokens it allows, end-of-generation only where it is complete), and generation
  // stops once nothing but the end may follow. Shared by the choices of a request, each of
  // which walks it on its own (grammar::Constraint); null: free text.
  std::shared_ptr<grammar::TokenMasker> grammar;
  // Thinking held to a number of tokens (engine/thinking_budget.h); null: no limit. Not
  // together with a grammar (the forced close marker would not be the grammar's).
  std::shared_ptr<const ThinkingBudgetSpec> thinking_budget;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids (an end-of-generation token included)
  // Their text: end-of-generation and other control tokens are not text, and a stop string
  // and what followed it are cut off.
  std::string text;
  // "length" (n_predict, the context limit or the request's deadline), "stop"
  // (end-of-generation token or stop string), "callback", or from the scheduler "cancelled",
  // "timeout" (the deadline passed before it started) and "error" (then `error` says what
  // went wrong).
  std::string finish_reason;
  std::string error;
  RunStats stats;
  // Where each generated token's text begins in the decoded text, one per token: a token at
  // or past text.size() contributed nothing that was kept (a stop string, an
  // end-of-generation token).
  std::vector<size_t> text_offsets;
  std::vector<TokenLogprob> logprobs;         // one per token when GenerateOptions::logprobs >= 0
  std::vector<TokenLogprob> prompt_logprobs;  // prompt tokens 1..n-1 when prompt_logprobs >= 0
  // Prompt tokens the sequence already held from an earlier request and did not feed again
  // (the scheduler's conversation reuse).
  int64_t reused_tokens = 0;
};

// One sampled token, as it is sampled: its text offset (GenerateResult::text_offsets) and its
// log-probabilities when they were asked for (else null).
struct TokenEvent {
  int32_t id = -1;
  size_t text_offset = 0;
  const TokenLogprob* logprob = nullptr;
  // Seconds the grammar took to compute this token's mask (-1: no grammar).
  double mask_seconds = -1;
};
using TokenCallback = std::function<void(const TokenEvent& token)>;

// on_text receives decoded text as it becomes final (complete UTF-8, past any stop-string
// prefix); returning false stops.
using TextCallback = std::function<bool(const std::string& text)>;

GenerateResult generate(const Model& model, Forward& forward, Sequence& seq, std::span<const int32_t> prompt,
                        const GenerateOptions& opt, Sampler& sampler, const TextCallback& on_text = nullptr);

// Exactly n tokens (end-of-generation ignored) on a fresh sequence of `policies`, sampled with
// `sampling` (temperature 0: greedy): the run alone that evaluations and tests compare
// batched, forked or compressed runs against.
GenerateResult generate_fresh(const Model& model, Forward& forward, const PolicyFactory& policies,
                              std::span<const int32_t> prompt, int64_t n, const SamplerParams& sampling,
                              NoticeFn notices = nullptr);

}  // namespace triattn
