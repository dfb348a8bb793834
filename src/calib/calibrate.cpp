#include "calib/calibrate.h"

#include <algorithm>

#include "calib/stats_accumulator.h"
#include "core/error.h"
#include "model/forward.h"

namespace triattn {

CalibrationResult calibrate_tokens(const Model& model, std::span<const int32_t> all_tokens,
                                   const CalibrateOptions& opt) {
  const ModelConfig& c = model.config();
  std::span<const int32_t> tokens = all_tokens;
  if (opt.max_tokens > 0 && static_cast<int64_t>(tokens.size()) > opt.max_tokens) tokens = tokens.first(opt.max_tokens);
  if (tokens.empty()) fail("calibration: the input has no tokens");
  const int64_t window = opt.window > 0 ? opt.window : c.context_length;
  if (window <= 0) fail("calibration: the model has no context length; give a window size");
  if (c.context_length > 0 && window > c.context_length)
    fail("calibration: window ", window, " is longer than the model's context length ", c.context_length);
  const int64_t chunk = std::max<int64_t>(1, opt.chunk);

  StatsAccumulator acc(c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim);
  Forward forward(model, opt.pool);
  std::vector<std::vector<float>> logits;
  const int64_t total = static_cast<int64_t>(tokens.size());
  CalibrationResult r;
  for (int64_t w0 = 0; w0 < total; w0 += window) {
    const int64_t wn = std::min(window, total - w0);
    KvCache cache(KvCacheShape{c.n_layers, c.n_kv_heads, c.head_dim, opt.kv_type}, wn);
    for (int64_t t0 = 0; t0 < wn; t0 += chunk) {
      ForwardItem item;
      item.cache = &cache;
      item.tokens = tokens.subspan(w0 + t0, std::min(chunk, wn - t0));
      item.logits = ForwardItem::Logits::None;
      forward.run(std::span<const ForwardItem>(&item, 1), logits, &acc);
      if (opt.progress) opt.progress(w0 + t0 + static_cast<int64_t>(item.tokens.size()), total);
    }
    ++r.windows;
  }
  if (acc.tokens() != total)
    fail("calibration: the forward pass reported ", acc.tokens(), " tokens to the observer, expected ", total);
  r.stats = acc.result();
  r.info = stats_info_for(c, total, fnv1a64_tokens(tokens));
  r.tokens.assign(tokens.begin(), tokens.end());
  return r;
}

CalibrationResult calibrate_text(const Model& model, const std::string& text, const CalibrateOptions& opt) {
  const Tokenizer& tok = model.tokenizer();
  // Like a prompt: BOS first when the model asks for it.
  const std::vector<int32_t> ids = tok.encode(text, tok.add_bos_default());
  return calibrate_tokens(model, ids, opt);
}

}  // namespace triattn
