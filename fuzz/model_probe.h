#pragma once
// Loads a model from a fuzzed file the way every command does (no repacking, one thread, so
// an input costs milliseconds) and touches what the forward pass would read.
#include "fuzz_util.h"
#include "model/model.h"

namespace triattn::fuzz {

inline void touch(const TensorView& t, size_t& sum) {
  if (!t.data) return;
  const size_t n = t.nbytes();
  if (n == 0) return;
  const auto* p = static_cast<const uint8_t*>(t.data);
  sum += p[0] + p[n - 1];
}

inline void load_and_touch(const std::string& path) {
  LoadOptions opt;
  opt.repack = false;
  opt.threads = 1;
  auto m = Model::load(path, opt);
  size_t sum = 0;
  const ModelWeights& w = m->weights();
  touch(w.tok_embd, sum);
  touch(w.output_norm, sum);
  touch(w.output, sum);
  for (const LayerWeights& l : w.layers) {
    for (const TensorView* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq, &l.bk, &l.bv, &l.q_norm,
                                &l.k_norm, &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down}) {
      touch(*t, sum);
    }
  }
  (void)m->tokenizer().encode("Once upon a time", true);
  (void)m->config().describe();
  (void)m->config().rope_freqs();
  volatile size_t sink = sum;
  (void)sink;
}

}  // namespace triattn::fuzz
