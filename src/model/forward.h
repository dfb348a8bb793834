#pragma once
// The one generic decoder forward pass (llama / qwen2 / qwen3 / qwen3moe / gpt-oss / gemma /
// qwen35 as data in ModelConfig). Each layer mixes tokens by attention over the KV cache or,
// in a hybrid model, by a Gated DeltaNet over a recurrent state kept in the same cache.
// A call takes a batch of items from independent sequences, each with its own KV cache;
// item tokens continue that cache at positions cache.n_processed() + i. Work for all items
// is batched through the weight matrices (prefill is matrix-matrix).
#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "model/attention_batch.h"
#include "model/forward_item.h"
#include "model/model.h"
#include "model/moe.h"

namespace triattn {

// Where the time of forward calls goes (`triattn bench --phases`): wall seconds per phase of
// the pass, summed over every call made while it is set (Forward::time_phases). The phases
// run one after another on the calling thread's clock, so they add up to the calls' time;
// the matrix phases are the parallel matmul calls alone, "other" the serial work between
// them (norms, RoPE, the KV append, residuals, the activation; the merge of the attention
// chunks counts as attention).
struct ForwardPhases {
  enum Phase { kQkv, kAttention, kOutput, kFfnIn, kFfnDown, kLogits, kOther, kCount };
  double seconds[kCount] = {};
  // "qkv", "attention", "output", "ffn in" (gate and up; a MoE layer's whole FFN), "ffn down",
  // "logits", "other".
  static const char* name(int phase);
};

class PhaseClock;  // charges the pass's time to ForwardPhases (forward.cpp)

class Forward {
 public:
  Forward(const Model& model, ThreadPool* pool);
  ThreadPool* pool() const { return pool_; }
  // Adds each later call's phase times to *phases; null (the default) stops timing.
  void time_phases(ForwardPhases* phases) { phases_ = phases; }
  // logits[i] gets item i's logits: vocab floats (Last), n_tokens*vocab (All) or empty.
  // Production code calls it through the engine step (engine/step.h) only.
  void run(std::span<const ForwardItem> items, std::vector<std::vector<float>>& logits);

 private:
  // The batch flattened: token t is tok_[t] of items[owner_[t]] at position pos_[t].
  int64_t flatten(std::span<const ForwardItem> items);
  void embed();
  void rope_tables();
  void attention_block(int l, std::span<const ForwardItem> items, PhaseClock& clock);
  void split_query_gate(int64_t T);
  void delta_block(int l, std::span<const ForwardItem> items, PhaseClock& clock);
  void ffn_block(int l, PhaseClock& clock);
  void output_logits(std::span<const ForwardItem> items, std::vector<std::vector<float>>& logits);

  const Model& model_;
  ThreadPool* pool_;
  // Scratch reused between calls (sized for the largest batch seen).
  int64_t T_ = 0;
  std::vector<int32_t> tok_, pos_, owner_;
  std::vector<int64_t> item_first_;  // item i's tokens are [item_first_[i], item_first_[i + 1])
  std::vector<float> x_, xn_, q_, k_, v_, att_, gate_, up_, tmp_, cos_, sin_, cos_local_, sin_local_;
  std::vector<float> qg_, out_gate_;  // gated attention: q_proj's output, the output gate
  std::vector<float> dn_qkv_, dn_conv_, dn_z_, dn_out_, dn_beta_, dn_g_;  // DeltaNet layers
  BatchedAttention attention_;
  MoeFfn moe_;  // the MoE layers' FFN and its scratch
  ForwardPhases* phases_ = nullptr;
};

}  // namespace triattn
