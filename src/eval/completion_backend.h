#pragma once
// Where `eval dfs` and `eval math` get replies from: the engine (the loaded model, one
// configuration per policy × budget) or any OpenAI-compatible endpoint (--url, e.g. a running
// `triattn serve`, vLLM, llama-server), so a user can score a real reasoning model.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chat/chat_prompt.h"
#include "engine/sampler.h"
#include "eval/eval_config.h"
#include "model/model.h"

namespace triattn::eval {

struct CompletionJob {
  size_t config = 0;   // index into CompletionBackend::configs()
  std::string prompt;  // the user message (chat) or the whole prompt (raw)
  int64_t max_tokens = 0;
  SamplerParams sampling;
};

struct Completion {
  std::string text;       // the reply (chat: content, after any reasoning_content)
  int64_t tokens = 0;     // generated tokens (as reported)
  std::string finish_reason;
};

class CompletionBackend {
 public:
  virtual ~CompletionBackend() = default;
  virtual const std::vector<EvalConfig>& configs() const = 0;
  // Every job's reply, in order; done() after each one (never two at once). threads: the
  // forward pass's threads (engine, 0 = all cores) or the requests kept in flight (remote).
  virtual std::vector<Completion> complete_all(const std::vector<CompletionJob>& jobs, int threads,
                                               const std::function<void()>& done) const = 0;
  // "engine" or the URL, for results.json.
  virtual std::string describe() const = 0;
};

enum class PromptFormat { Auto, Chat, Raw };

// The loaded model under each configuration. Chat: the prompt becomes a user message in the
// model's chat template (Auto: when the model ships one); Raw: BOS + the text.
std::unique_ptr<CompletionBackend> engine_backend(const Model& model, const ConfigFactories& configs,
                                                  PromptFormat format, const ChatPromptOptions& chat);

struct RemoteOptions {
  std::string url;      // http://HOST:PORT, optionally with a path prefix such as /v1
  std::string api_key;  // Authorization: Bearer
  std::string model_name;  // the "model" field
  PromptFormat format = PromptFormat::Auto;  // Auto/Chat: /v1/chat/completions; Raw: /v1/completions
  int timeout_s = 3600;
  // Configurations to request (kv_policy, kv_budget, ... as body fields, as `triattn serve`
  // reads them); empty: one configuration, "server", that sends none.
  std::vector<EvalConfig> configs;
  // divide_length and window sent with each evicting configuration; sink and pruning_mode
  // too when set (else the server's defaults, which are each policy's).
  KvSettings kv;
};

std::unique_ptr<CompletionBackend> remote_backend(const RemoteOptions& options);

}  // namespace triattn::eval
