#pragma once
// The engine side of an evaluation: every generation of every configuration and sample goes
// to one scheduler, so they share each weight pass (decode tokens of many sequences and
// their prompts' chunks in one forward call) instead of each streaming the weights on its
// own. A job's result is what generate() gives for it alone on a fresh sequence.
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/generate.h"
#include "engine/kv_setup.h"
#include "engine/sampler.h"
#include "model/forward.h"
#include "model/model.h"

namespace triattn::eval {

struct GenerationJob {
  const PolicyFactory* policies = nullptr;  // the configuration; must outlive the run
  std::vector<int32_t> prompt;
  GenerateOptions options;
  SamplerParams sampling;
};

// Sequences that run at once: enough to batch every configuration's sequences together.
int eval_parallel(size_t n_configs, size_t n_jobs);

// results[i] is job i's. on_done(i) is called as each job ends, on the calling thread. A job
// that fails throws its error here.
std::vector<GenerateResult> run_generations(const Model& model, Forward& forward, const std::vector<GenerationJob>& jobs,
                                            int parallel, const std::function<void(size_t job)>& on_done = nullptr);

}  // namespace triattn::eval
