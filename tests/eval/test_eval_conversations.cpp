// eval/generations.h with conversations: a job's second turn continues the sequence its
// first ended on (every token of the first turn's prompt and reply continued, none fed
// again), and gives what one generation of the whole conversation gives alone; jobs without
// later turns run beside them unchanged, more jobs than run at once included; a job refused
// when its turn comes fails the run.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "common/shared_files.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "eval/generations.h"

namespace triattn::eval {
namespace {

TEST(EvalConversations, SecondTurnContinuesTheFirstTurnsSequence) {
  const std::shared_ptr<const Model> model = Model::load(test::shared_path("models/stories260k/stories260K.bin"));
  const Tokenizer& tok = model->tokenizer();
  const PolicyFactory full(*model, KvSettings{});
  ThreadPool pool(1);
  Forward forward(*model, &pool);
  const std::vector<std::string> starts = {"Once upon a time", "Lily had a red ball", "The dog ran to the park",
                                           "Tom and Sue were friends", "One day, a little bird"};
  std::vector<GenerationJob> jobs;
  for (size_t i = 0; i < starts.size(); ++i) {
    GenerationJob j;
    j.policies = &full;
    j.prompt = tok.encode(starts[i], tok.add_bos_default());
    j.options.n_predict = 6;
    j.options.stop_at_eog = false;
    j.sampling.temperature = 0;
    if (i % 2 == 0) {  // jobs 0, 2, 4 are conversations; 1 and 3 single turns
      FollowUp f;
      f.prompt = tok.encode(" She said", false);
      f.options.n_predict = 5;
      f.options.stop_at_eog = false;
      j.follow_ups.push_back(f);
    }
    jobs.push_back(j);
  }
  size_t done = 0;
  const auto out = run_conversations(*model, forward, jobs, 2, [&](size_t) { ++done; });
  EXPECT_EQ(done, jobs.size());
  ASSERT_EQ(out.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const GenerateResult first_alone = generate_fresh(*model, forward, full, jobs[i].prompt, 6, jobs[i].sampling);
    ASSERT_EQ(out[i].size(), 1 + jobs[i].follow_ups.size()) << i;
    EXPECT_EQ(out[i][0].tokens, first_alone.tokens) << i;
    EXPECT_EQ(out[i][0].reused_tokens, 0) << i;
    if (jobs[i].follow_ups.empty()) continue;
    // The whole conversation as one prompt: its first turn, the reply, the second turn.
    std::vector<int32_t> whole = jobs[i].prompt;
    whole.insert(whole.end(), out[i][0].tokens.begin(), out[i][0].tokens.end());
    whole.insert(whole.end(), jobs[i].follow_ups[0].prompt.begin(), jobs[i].follow_ups[0].prompt.end());
    const GenerateResult second_alone = generate_fresh(*model, forward, full, whole, 5, jobs[i].sampling);
    EXPECT_EQ(out[i][1].tokens, second_alone.tokens) << i;
    EXPECT_EQ(out[i][1].reused_tokens, static_cast<int64_t>(jobs[i].prompt.size() + 6)) << i;
    EXPECT_EQ(out[i][1].stats.prompt_tokens, static_cast<int64_t>(jobs[i].follow_ups[0].prompt.size()))
        << "only the second turn's own tokens were fed";
  }
  // run_generations: each job's last turn.
  const auto last = run_generations(*model, forward, jobs, 3);
  ASSERT_EQ(last.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(last[i].tokens, out[i].back().tokens) << i;
}

// A job refused when its turn comes (its prompt is past the context) fails the run with the
// scheduler's reason, though the jobs before it were already running.
TEST(EvalConversations, ALaterJobRefusedFailsTheRun) {
  const std::shared_ptr<const Model> model = Model::load(test::shared_path("models/stories260k/stories260K.bin"));
  const Tokenizer& tok = model->tokenizer();
  const PolicyFactory full(*model, KvSettings{});
  ASSERT_GT(full.context_limit(), 0);
  ThreadPool pool(1);
  Forward forward(*model, &pool);
  std::vector<GenerationJob> jobs(5);
  for (GenerationJob& j : jobs) {
    j.policies = &full;
    j.prompt = tok.encode("Once upon a time", tok.add_bos_default());
    j.options.n_predict = 2;
    j.sampling.temperature = 0;
  }
  jobs[3].prompt.resize(static_cast<size_t>(full.context_limit()) + 1, jobs[3].prompt.back());
  try {
    run_conversations(*model, forward, jobs, 2);
    ADD_FAILURE() << "a prompt past the context ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than the context"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace triattn::eval
