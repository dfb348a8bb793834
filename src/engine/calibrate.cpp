#include "engine/calibrate.h"

#include <algorithm>

#include "calib/stats_accumulator.h"
#include "core/error.h"
#include "engine/kv_setup.h"
#include "engine/sequence.h"
#include "engine/step.h"
#include "model/weights_fingerprint.h"

namespace triattn {

namespace {

// Forwards every observation to the statistics, then to the caller's observer.
class TeeObserver final : public ForwardObserver {
 public:
  TeeObserver(ForwardObserver& first, ForwardObserver* second) : first_(first), second_(second) {}
  void on_pre_rope(int layer, int64_t pos0, int64_t n_tokens, const float* q, const float* k) override {
    first_.on_pre_rope(layer, pos0, n_tokens, q, k);
    if (second_) second_->on_pre_rope(layer, pos0, n_tokens, q, k);
  }

 private:
  ForwardObserver& first_;
  ForwardObserver* second_;
};

// The layers the forward pass reports pre-RoPE vectors for: all but the DeltaNet ones.
std::vector<int> kv_layers(const ModelConfig& c) {
  std::vector<int> out;
  for (int l = 0; l < c.n_layers; ++l)
    if (!c.is_delta(l)) out.push_back(l);
  return out;
}

}  // namespace

CalibrationResult calibrate_tokens(const Model& model, std::span<const int32_t> all_tokens,
                                   const CalibrateOptions& opt) {
  const ModelConfig& c = model.config();
  if (opt.max_tokens < 0) fail("calibration: --max-tokens ", opt.max_tokens, " is negative (0 = the whole input)");
  if (opt.window < 0) fail("calibration: --window ", opt.window, " is negative (0 = the model's context length)");
  if (opt.chunk < 1) fail("calibration: --chunk ", opt.chunk, " must be at least 1");
  std::span<const int32_t> tokens = all_tokens;
  if (opt.max_tokens > 0 && static_cast<int64_t>(tokens.size()) > opt.max_tokens) tokens = tokens.first(opt.max_tokens);
  const int32_t bos = model.tokenizer().bos_id();
  const int64_t content = static_cast<int64_t>(tokens.size()) - (!tokens.empty() && bos >= 0 && tokens[0] == bos);
  if (content < kMinCalibrationTokens)
    fail("calibration: the input gives ", content, " token(s)", tokens.size() > static_cast<size_t>(content) ? " after BOS" : "",
         opt.max_tokens > 0 ? " (after --max-tokens " + std::to_string(opt.max_tokens) + ")" : std::string(),
         "; at least ", kMinCalibrationTokens, " are needed (from one token every band's mean resultant length is 1 ",
         "and the statistics describe that token, not the model), and thousands give useful statistics");
  const int64_t window = opt.window > 0 ? opt.window : c.context_length;
  if (window <= 0) fail("calibration: the model has no context length; give a window size");
  if (c.context_length > 0 && window > c.context_length)
    fail("calibration: window ", window, " is longer than the model's context length ", c.context_length);
  const int64_t chunk = opt.chunk;

  // Layers without KV (DeltaNet) are never observed; their statistics stay zero and the file's
  // scored_layers leaves them out.
  if (c.layer_shape_differs())
    fail("calibration: ", c.arch, " models whose sliding and full layers differ in KV heads or head_dim are not "
         "supported yet");
  StatsAccumulator acc(c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.rotary_dims(), kv_layers(c));
  TeeObserver observer(acc, opt.also_observe);
  Forward forward(model, opt.pool);
  EngineStep step(forward);
  // Each window a fresh full-attention sequence, fed in chunks of `chunk` tokens.
  KvSettings settings;
  settings.cache_type = opt.kv_type;
  settings.prefill_chunk = chunk;
  settings.context_length = window;
  const PolicyFactory policies(model, settings);
  const int64_t total = static_cast<int64_t>(tokens.size());
  CalibrationResult r;
  for (int64_t w0 = 0; w0 < total; w0 += window) {
    const int64_t wn = std::min(window, total - w0);
    Sequence seq(model, policies);
    seq.reserve_for(wn);
    for (int64_t t0 = 0; t0 < wn; t0 += chunk) {
      StepItem item;
      item.seq = &seq;
      item.tokens = tokens.subspan(w0 + t0, std::min(chunk, wn - t0));
      item.logits = ForwardItem::Logits::None;
      item.observer = &observer;
      step.run(std::span<StepItem>(&item, 1));
      if (item.error) std::rethrow_exception(item.error);
      if (opt.progress) opt.progress(w0 + t0 + static_cast<int64_t>(item.tokens.size()), total);
    }
    ++r.windows;
  }
  if (acc.tokens() != total)
    fail("calibration: the forward pass reported ", acc.tokens(), " tokens to the observer, expected ", total);
  r.stats = acc.result();
  r.info = stats_info_for(c, total, fnv1a64_tokens(tokens));
  r.info.weights_fingerprint = weights_fingerprint(model);  // which weights, beyond the shape
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
