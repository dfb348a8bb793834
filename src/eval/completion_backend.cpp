#include "eval/completion_backend.h"

#include <httplib.h>

#include <mutex>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/http_url.h"
#include "core/thread_pool.h"
#include "eval/generations.h"
#include "eval/parallel_runs.h"

namespace triattn::eval {

namespace {

class EngineBackend : public CompletionBackend {
 public:
  EngineBackend(const Model& model, const ConfigFactories& configs, PromptFormat format, const ChatPromptOptions& chat)
      : model_(model), configs_(configs) {
    const bool has_template = !model.tokenizer().chat_template().empty() || !chat.template_path.empty();
    if (format == PromptFormat::Chat || (format == PromptFormat::Auto && has_template))
      chat_ = std::make_unique<ChatPrompt>(model.tokenizer(), model.path(), chat, nullptr);
  }
  const std::vector<EvalConfig>& configs() const override { return configs_.configs(); }
  std::string describe() const override { return chat_ ? "engine (chat template: " + chat_->origin() + ")" : "engine (raw prompt)"; }

  std::vector<Completion> complete_all(const std::vector<CompletionJob>& jobs, int threads,
                                       const std::function<void()>& done) const override {
    std::vector<GenerationJob> gen(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      gen[i].policies = &configs_.at(jobs[i].config);
      gen[i].prompt = tokenize(jobs[i].prompt);
      gen[i].options.n_predict = jobs[i].max_tokens;
      gen[i].sampling = jobs[i].sampling;
    }
    ThreadPool pool(threads);
    Forward forward(model_, &pool);
    const std::vector<GenerateResult> out = run_generations(
        model_, forward, gen, eval_parallel(configs_.size(), gen.size()), [&](size_t) {
          if (done) done();
        });
    std::vector<Completion> replies;
    for (const GenerateResult& r : out) replies.push_back({r.text, static_cast<int64_t>(r.tokens.size()), r.finish_reason});
    return replies;
  }

 private:
  std::vector<int32_t> tokenize(const std::string& text) const {
    if (!chat_) return model_.tokenizer().encode(text, model_.tokenizer().add_bos_default());
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    messages.push_back(chat_message("user", text));
    return chat_->tokenize(chat_->render(messages, /*add_generation_prompt=*/true));
  }

  const Model& model_;
  const ConfigFactories& configs_;
  std::unique_ptr<ChatPrompt> chat_;
};

class RemoteBackend : public CompletionBackend {
 public:
  explicit RemoteBackend(const RemoteOptions& o) : o_(o) {
    const HttpUrl u = parse_http_url(o.url);
    base_ = u.origin();
    path_ = u.api_root + (o.format == PromptFormat::Raw ? "/completions" : "/chat/completions");
    if (o_.configs.empty()) o_.configs.push_back({"server", 0});
  }
  const std::vector<EvalConfig>& configs() const override { return o_.configs; }
  std::string describe() const override { return base_ + path_; }

  std::vector<Completion> complete_all(const std::vector<CompletionJob>& jobs, int threads,
                                       const std::function<void()>& done) const override {
    std::vector<Completion> replies(jobs.size());
    std::mutex mu;
    run_parallel(static_cast<int64_t>(jobs.size()), threads, [&](int64_t i) {
      replies[static_cast<size_t>(i)] = complete(jobs[static_cast<size_t>(i)]);
      std::lock_guard<std::mutex> lock(mu);
      if (done) done();
    });
    return replies;
  }

 private:
  Completion complete(const CompletionJob& job) const {
    const EvalConfig& c = o_.configs[job.config];
    nlohmann::json body = {{"max_tokens", job.max_tokens}, {"temperature", job.sampling.temperature},
                           {"top_p", job.sampling.top_p}, {"seed", job.sampling.seed}};
    if (!o_.model_name.empty()) body["model"] = o_.model_name;
    if (o_.format == PromptFormat::Raw) body["prompt"] = job.prompt;
    else body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", job.prompt}}});
    if (c.policy != "server") {
      body["kv_policy"] = c.policy;
      if (c.recall) body["kv_recall"] = true;  // a server without the cold tier refuses the field
      if (c.prunes()) {
        body["kv_budget"] = c.budget;
        body["divide_length"] = o_.kv.params.divide_length;
        body["window"] = o_.kv.params.window;
        if (o_.kv.params.sink) body["sink"] = *o_.kv.params.sink;
        if (o_.kv.params.mode) body["pruning_mode"] = std::string(pruning_mode_name(*o_.kv.params.mode));
      }
    }
    httplib::Client cl(base_);
    cl.set_read_timeout(o_.timeout_s, 0);
    cl.set_write_timeout(60, 0);
    httplib::Headers h;
    if (!o_.api_key.empty()) h.emplace("Authorization", "Bearer " + o_.api_key);
    const auto res = cl.Post(path_, h, body.dump(), "application/json");
    if (!res) fail(base_, path_, ": request failed (", httplib::to_string(res.error()), ")");
    if (res->status != 200) fail(base_, path_, ": HTTP ", res->status, ": ", res->body.substr(0, 400));
    const nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_discarded() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
      fail(base_, path_, ": the reply is not an OpenAI completion (no choices): ", res->body.substr(0, 400));
    const nlohmann::json& ch = j["choices"][0];
    Completion out;
    if (o_.format == PromptFormat::Raw) {
      if (ch.contains("text") && ch["text"].is_string()) out.text = ch["text"].get<std::string>();
    } else {
      const nlohmann::json msg = ch.contains("message") && ch["message"].is_object() ? ch["message"] : nlohmann::json::object();
      // A split reasoning model puts its thinking apart: keep it before the answer, so a
      // \boxed{} written only while thinking still counts as the last one.
      if (msg.contains("reasoning_content") && msg["reasoning_content"].is_string())
        out.text = msg["reasoning_content"].get<std::string>() + "\n";
      if (msg.contains("content") && msg["content"].is_string()) out.text += msg["content"].get<std::string>();
    }
    if (ch.contains("finish_reason") && ch["finish_reason"].is_string()) out.finish_reason = ch["finish_reason"];
    if (j.contains("usage") && j["usage"].is_object() && j["usage"].contains("completion_tokens") &&
        j["usage"]["completion_tokens"].is_number_integer())
      out.tokens = j["usage"]["completion_tokens"].get<int64_t>();
    return out;
  }

  RemoteOptions o_;
  std::string base_, path_;
};

}  // namespace

std::unique_ptr<CompletionBackend> engine_backend(const Model& model, const ConfigFactories& configs,
                                                  PromptFormat format, const ChatPromptOptions& chat) {
  return std::make_unique<EngineBackend>(model, configs, format, chat);
}

std::unique_ptr<CompletionBackend> remote_backend(const RemoteOptions& options) {
  return std::make_unique<RemoteBackend>(options);
}

}  // namespace triattn::eval
