#pragma once
// The engine side of an evaluation: every generation of every configuration and sample goes
// to one scheduler, so they share each weight pass (decode tokens of many sequences and
// their prompts' chunks in one forward call) instead of each streaming the weights on its
// own. A job's result is what generate() gives for it alone on a fresh sequence. A job may
// be a conversation: its later turns continue the sequence its earlier ones ended on.
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/generate.h"
#include "engine/kv_setup.h"
#include "engine/sampler.h"
#include "model/forward.h"
#include "model/model.h"

namespace triattn::eval {

// A later turn of a job's conversation: its prompt is fed on the sequence the turn before
// ended on, after that turn's reply (the cache continued as it stands, compressed or not,
// never prefilled again).
struct FollowUp {
  std::vector<int32_t> prompt;  // this turn's own tokens (no BOS unless wanted)
  GenerateOptions options;
};

struct GenerationJob {
  const PolicyFactory* policies = nullptr;  // the configuration; must outlive the run
  std::vector<int32_t> prompt;
  GenerateOptions options;
  SamplerParams sampling;  // every turn's
  // The conversation's later turns, in order. A turn that another follows feeds its whole
  // reply (feed_last, output kept) so that the next one continues after it.
  std::vector<FollowUp> follow_ups;
};

// Sequences that run at once: enough to batch every configuration's sequences together.
int eval_parallel(size_t n_configs, size_t n_jobs);

// results[i][t] is job i's turn t (0: its prompt, then each follow-up). on_done(i) is called
// as each job's last turn ends, on the calling thread. A job that fails throws its error here.
std::vector<std::vector<GenerateResult>> run_conversations(const Model& model, Forward& forward,
                                                           const std::vector<GenerationJob>& jobs, int parallel,
                                                           const std::function<void(size_t job)>& on_done = nullptr);

// results[i] is job i's (its last turn's).
std::vector<GenerateResult> run_generations(const Model& model, Forward& forward, const std::vector<GenerationJob>& jobs,
                                            int parallel, const std::function<void(size_t job)>& on_done = nullptr);

}  // namespace triattn::eval
