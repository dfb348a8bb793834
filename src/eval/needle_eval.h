#pragma once
// `triattn eval needle --data FILE.jsonl`: retrieval of a fact planted far back in the
// prompt. Each line is {"text": prompt, "answer": string} (other fields are kept in the
// per-sample results). The prompt is tokenized as the model asks (BOS), prefilled in chunks
// with pruning before each chunk (the runtime's behaviour), then continued greedily for as
// many tokens as the answer has plus 4; a sample is correct when the continuation, leading
// spaces dropped, begins with the answer. The answer's depth is where its first occurrence
// sits in the prompt (0 = start, 1 = end; "absent" when the prompt does not contain it),
// reported in quarters.
//
// In two turns (--turns 2 --gen G) the prompt is split at its last line: the document (up to
// and including the last '\n', with BOS) is fed and compressed, G tokens are generated
// greedily (exactly G: end-of-generation does not stop them), then the question (the last
// line) is fed as a continuation of the same sequence and the answer generated and scored as
// in one turn: the needle must survive the eviction of a finished turn and a reply.
#include <string>
#include <utility>
#include <vector>

#include "eval/eval_config.h"
#include "eval/report.h"

namespace triattn::eval {

struct NeedleItem {
  std::string text, answer;
  double depth = -1;  // first occurrence of the answer / prompt length; -1 when absent
  int64_t line = 0;
};

// Error "FILE:LINE: ..." for a bad line (not an object, no "text"/"answer", empty answer).
std::vector<NeedleItem> read_needles(const std::string& path);

// How a prompt is fed: whole (turns 1), or document then question (turns 2) with `gen`
// tokens generated between them.
struct NeedleTurns {
  int turns = 1;
  int64_t gen = 0;
};

// Error unless turns is 1 or 2, gen >= 0, and gen is 0 with one turn.
void check_needle_turns(const NeedleTurns& t);

// {document, question}: text split after its last '\n'. Error naming the item's line when
// the text has no line break or nothing after the last one.
std::pair<std::string, std::string> split_needle_turns(const NeedleItem& item);

// True when `continuation` (leading whitespace dropped) begins with `answer`.
bool needle_correct(const std::string& continuation, const std::string& answer);

struct NeedleResult {
  EvalConfig config;
  std::vector<std::string> outputs;  // per item
  // Per item, turns 2: the text of the tokens generated after the document, and their count.
  std::vector<std::string> first_outputs;
  std::vector<int64_t> first_tokens;
  std::vector<bool> correct;
  std::vector<int64_t> kv_peak;  // per item: the most tokens any (layer, KV head) held (prefill included)
  double accuracy() const;
  int64_t max_kv_peak() const;
  // Accuracy over the items whose depth falls in quarter q (0..3), NaN when none.
  double accuracy_in_quarter(const std::vector<NeedleItem>& items, int q) const;
};

std::vector<NeedleResult> run_needle(const Model& model, const ConfigFactories& configs,
                                     const std::vector<NeedleItem>& items, int threads, bool progress,
                                     const NeedleTurns& turns = {});

// run_info["turns"] == 2 names the turns in the plot's title.
TaskReport needle_report(const std::vector<NeedleResult>& results, const std::vector<NeedleItem>& items,
                         const nlohmann::json& run_info);

}  // namespace triattn::eval
