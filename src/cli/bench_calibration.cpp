#include "cli/bench_calibration.h"

#include <algorithm>
#include <chrono>

#include "engine/calibrate.h"

namespace triattn::cli {

namespace {

// Plain English prose written for this project: varied words and punctuation so that any
// tokenizer produces a few hundred tokens of ordinary text.
constexpr const char* kText =
    "The lighthouse keeper woke before dawn, as she had every morning for eleven years. She "
    "climbed the spiral stairs, counted the steps out of habit, and wiped the salt from the "
    "great lens. Far below, the fishing boats were leaving the harbour one by one, their lamps "
    "swaying like slow fireflies. When the sun rose she wrote three lines in the log: the wind "
    "from the north-west, the sea moderate, a single gull asleep on the railing.\n"
    "In the afternoon a letter arrived with the supply boat. Her brother wrote that the city had "
    "changed again: new trams, a bridge painted blue, a bakery that sold bread shaped like "
    "stars. He asked whether she would ever come back. She read the letter twice, folded it "
    "into a small square, and put it inside the cover of the log book, where she kept the "
    "things she had not yet decided about.\n"
    "That night a storm came in faster than the forecast had promised. Rain hammered the "
    "windows, the tower hummed in the gusts, and the light turned and turned, sweeping its "
    "white arm across the water. Around midnight she saw a small sailing boat struggling near "
    "the rocks. She signalled with the hand lamp, long and short, long and short, until the "
    "boat turned toward the calm water behind the point. In the morning the sailor climbed the "
    "hill to thank her, carrying a loaf of bread shaped like a star.\n";

}  // namespace

BuiltinCalibration calibrate_builtin(const Model& model, ThreadPool& pool) {
  CalibrateOptions opt;
  opt.pool = &pool;
  opt.max_tokens = 512;
  const int64_t ctx = model.config().context_length;
  opt.window = ctx > 0 ? std::min<int64_t>(ctx, 512) : 512;
  const auto t0 = std::chrono::steady_clock::now();
  CalibrationResult r = calibrate_text(model, kText, opt);
  BuiltinCalibration out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.tokens = r.info.token_count;
  out.stats = std::make_shared<const HeadStats>(std::move(r.stats));
  return out;
}

}  // namespace triattn::cli
