#pragma once
// Figures of one generation, as printed by `generate --json` (keys are a contract).
#include <cstdint>
#include <nlohmann/json.hpp>

namespace triattn {

struct RunStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
  int64_t kv_peak_tokens = 0;  // largest token count held by any (layer, KV head)
  size_t kv_peak_bytes = 0;
  int64_t prune_events = 0;
  double scoring_ms = 0;
  double grammar_ms = 0;  // constrained decoding: masks and grammar steps (not in to_json)
  // The cold tier and recall (--kv-recall): rows brought back, the time recall events took
  // (beside scoring_ms, the policy's), and the most bytes the cold store held.
  int64_t recalled_rows = 0;
  double recall_ms = 0;
  size_t kv_cold_peak_bytes = 0;

  double prefill_tok_s() const { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0; }
  // Decode speed counts the forward steps after the prompt (the first generated token comes
  // from the prefill logits).
  double decode_tok_s() const {
    const int64_t steps = generated_tokens > 0 ? generated_tokens - 1 : 0;
    return decode_seconds > 0 ? steps / decode_seconds : 0;
  }
  nlohmann::json to_json() const {
    return {{"prefill_tok_s", prefill_tok_s()}, {"decode_tok_s", decode_tok_s()},
            {"kv_peak_tokens", kv_peak_tokens}, {"kv_peak_bytes", kv_peak_bytes},
            {"prune_events", prune_events},     {"scoring_ms", scoring_ms},
            {"prompt_tokens", prompt_tokens},   {"generated_tokens", generated_tokens},
            {"recalled_rows", recalled_rows},   {"recall_ms", recall_ms},
            {"kv_cold_peak_bytes", kv_cold_peak_bytes}};
  }
};

}  // namespace triattn
