#include "server/completion_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <variant>

#include "core/error.h"
#include "kv/keep_set.h"
#include "kv/policy.h"
#include "server/api_error.h"
#include "server/grammar_fields.h"
#include "server/request_fields.h"
#include "server/tool_fields.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;

constexpr int64_t kMaxChoices = 16;      // n (each choice holds its own KV cache)
constexpr int64_t kMaxTopLogprobs = 20;  // alternatives per token, as OpenAI allows

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw ApiError(400, "'" + field + "' " + what, field);
}

const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number(const json& body, const char* name, double fallback, double lo, double hi) {
  const json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_number()) bad(name, "must be a number");
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) bad(name, "must be between " + json(lo).dump() + " and " + json(hi).dump() + ", got " + v->dump());
  return x;
}

int64_t integer(const json& body, const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return fallback;
  auto range = [&] {
    bad(name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + v->dump());
  };
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo) range();
    return static_cast<int64_t>(u);
  }
  if (v->is_number_integer()) {
    const int64_t i = v->get<int64_t>();
    if (i < lo || i > hi) range();
    return i;
  }
  if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()) {  // 64.0
    const double d = v->get<double>();
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) range();
    return static_cast<int64_t>(d);
  }
  bad(name, "must be a whole number, got " + v->dump());
}

bool boolean(const json& body, const char* name, bool fallback) {
  const json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_boolean()) bad(name, "must be true or false");
  return v->get<bool>();
}

std::vector<std::string> stop_list(const json& body) {
  const json* v = field(body, "stop");
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) bad("stop", "must be a string or a list of strings");
  if (v->size() > 16) bad("stop", "may hold at most 16 strings");
  std::vector<std::string> out;
  for (const json& s : *v) {
    if (!s.is_string()) bad("stop", "must be a string or a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

std::vector<int32_t> prompt_of_completion(const json& body, const Model& model, std::string* text_out) {
  const json* p = field(body, "prompt");
  if (!p) bad("prompt", "is required");
  const Tokenizer& tok = model.tokenizer();
  const json* text = p->is_string() ? p : p->is_array() && p->size() == 1 && (*p)[0].is_string() ? &(*p)[0] : nullptr;
  if (text) {
    *text_out = text->get<std::string>();
    return tok.encode(*text_out, tok.add_bos_default());
  }
  if (p->is_array() && !p->empty() && (*p)[0].is_number_integer()) {  // token ids
    std::vector<int32_t> ids;
    for (const json& t : *p) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= model.config().vocab_size)
        bad("prompt", "token ids must be whole numbers from 0 to " + std::to_string(model.config().vocab_size - 1));
      ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    *text_out = tok.decode(ids);
    return ids;
  }
  bad("prompt", "must be a string, a list of one string, or a list of token ids (batches of prompts are not supported)");
}

std::vector<int32_t> prompt_of_chat(const json& body, const ChatPrompt& chat_prompt, const ToolRequest* tools,
                                    std::string* text_out) {
  const ToolSyntax syntax = tool_syntax_of_template(chat_prompt.template_source());
  const json* m = field(body, "messages");
  if (!m) bad("messages", "is required");
  if (!m->is_array() || m->empty()) bad("messages", "must be a non-empty list of {role, content} objects");
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (size_t i = 0; i < m->size(); ++i) {
    const json& msg = (*m)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) bad(at, "must be an object with 'role' and 'content'");
    const json* role = field(msg, "role");
    if (!role || !role->is_string()) bad(at + ".role", "must be a string");
    const json* content = field(msg, "content");
    std::string text;
    if (content && content->is_string()) {
      text = content->get<std::string>();
    } else if (content && content->is_array()) {  // [{type: text, text: ...}, ...]
      for (const json& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
          bad(at + ".content", "parts must be {\"type\": \"text\", \"text\": ...} (only text is supported)");
        text += part["text"].get<std::string>();
      }
    } else if (content) {
      bad(at + ".content", "must be a string or a list of text parts");
    }
    messages.push_back(chat_message(role->get<std::string>(), text));
    add_tool_history(msg, at, syntax, messages.back());
    // An assistant turn's earlier reasoning, for templates that show it again (Qwen3's does for
    // the turns after the last user message).
    if (const json* rc = field(msg, "reasoning_content")) {
      if (*role != "assistant") bad(at + ".reasoning_content", "belongs to assistant messages");
      if (!rc->is_string()) bad(at + ".reasoning_content", "must be a string");
      messages.back()["reasoning_content"] = rc->get<std::string>();
    }
  }
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  if (tools && tools->reads_calls()) kwargs["tools"] = tools->template_tools;
  if (const json* k = field(body, "chat_template_kwargs")) {
    if (!k->is_object()) bad("chat_template_kwargs", "must be an object");
    for (auto it = k->begin(); it != k->end(); ++it) kwargs[it.key()] = it.value();
  }
  try {
    *text_out = chat_prompt.render(messages, /*add_generation_prompt=*/true, kwargs);
    return chat_prompt.tokenize(*text_out);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), "messages");
  }
}

// {"token id": bias}: ids of this vocabulary, biases in [-100, 100] (OpenAI's range).
std::vector<LogitBias> logit_bias_of(const json& body, int64_t vocab_size) {
  const json* v = field(body, "logit_bias");
  if (!v) return {};
  if (!v->is_object()) bad("logit_bias", "must be an object mapping token ids (as strings) to biases");
  std::vector<LogitBias> out;
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    int64_t id = -1;
    if (!key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos) id = std::stoll(key);
    if (id < 0 || id >= vocab_size)
      bad("logit_bias", "names '" + key + "', not a token id of this model (0 to " + std::to_string(vocab_size - 1) + ")");
    const double bias = it->is_number() ? it->get<double>() : NAN;
    if (!(bias >= -100 && bias <= 100))
      bad("logit_bias", "biases must be numbers from -100 to 100, got " + it->dump() + " for '" + key + "'");
    out.push_back({static_cast<int32_t>(id), static_cast<float>(bias)});
  }
  return out;
}

// OpenAI's metadata: up to 16 pairs of strings, keys up to 64 characters, values up to 512.
json metadata_of(const json& body) {
  const json* v = field(body, "metadata");
  if (!v) return nullptr;
  if (!v->is_object()) bad("metadata", "must be an object of string values");
  if (v->size() > 16) bad("metadata", "may hold at most 16 pairs, got " + std::to_string(v->size()));
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (it.key().size() > 64) bad("metadata", "keys may be at most 64 characters ('" + it.key().substr(0, 64) + "...')");
    if (!it->is_string()) bad("metadata", "values must be strings ('" + it.key() + "' is not)");
    if (it->get<std::string>().size() > 512) bad("metadata", "values may be at most 512 characters ('" + it.key() + "')");
  }
  return *v;
}

// The vocabulary for grammars: the server's, else built for this request.
std::shared_ptr<const grammar::VocabTrie> vocab_of(const Model& model, const RequestDefaults& defaults) {
  if (defaults.vocab) return defaults.vocab;
  return std::make_shared<const grammar::VocabTrie>(
      grammar::VocabTrie::from_tokenizer(model.tokenizer(), static_cast<size_t>(model.config().vocab_size)));
}

uint64_t random_seed() {
  std::random_device rd;
  return ((static_cast<uint64_t>(rd()) << 32) | rd()) & static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}

// Reads one knob's request field (knob_field: "kv_budget", "obs_window", ...) by the type of
// its member, with the knob's range.
struct KnobField {
  const json& body;
  const PolicyKnob& knob;
  PolicyParams& params;
  std::string name = knob_field(knob);

  void operator()(int64_t PolicyParams::*m) const {
    params.*m = integer(body, name.c_str(), params.*m, knob.min, knob.max);
  }
  void operator()(uint64_t PolicyParams::*m) const {
    params.*m = static_cast<uint64_t>(integer(body, name.c_str(), static_cast<int64_t>(params.*m), knob.min, knob.max));
  }
  // Absent: the server's, else the policy's.
  void operator()(std::optional<int64_t> PolicyParams::*m) const {
    if (field(body, name.c_str())) params.*m = integer(body, name.c_str(), 0, knob.min, knob.max);
  }
  void operator()(double PolicyParams::*m) const {
    params.*m = number(body, name.c_str(), params.*m, knob.min_real, knob.max_real);
  }
  void operator()(bool PolicyParams::*m) const { params.*m = boolean(body, name.c_str(), params.*m); }
  void operator()(std::optional<PruningMode> PolicyParams::*m) const {
    if (const json* v = field(body, name.c_str())) {
      if (!v->is_string()) bad(name, "must be a string");
      auto mode = pruning_mode_from_name(v->get<std::string>());
      if (!mode) bad(name, "must be one of " + pruning_mode_names());
      params.*m = *mode;
    }
  }
};

void apply_kv_fields(const json& body, KvSettings& kv) {
  if (const json* v = field(body, "kv_policy")) {
    if (!v->is_string()) bad("kv_policy", "must be a string");
    kv.policy = v->get<std::string>();
  }
  // "stats": "auto" measures the statistics from the request's own queries; a file path is
  // not taken from a request (the server's --stats is the default when the field is absent).
  if (const json* v = field(body, "stats")) {
    if (!v->is_string() || v->get<std::string>() != kStatsAuto)
      bad("stats", "must be \"auto\" (statistics measured from the request's own queries); leave it out for the "
                   "server's statistics");
    const PolicyDescription* p = find_kv_policy(kv.policy);
    if (p && !p->online_stats)
      bad("stats", "\"auto\" is for " + online_stats_policies() + ", not the '" + kv.policy + "' policy");
    kv.stats_path = kStatsAuto;
    kv.params.stats = nullptr;
  }
  kv.recall.on = boolean(body, "kv_recall", kv.recall.on);
  if (kv.recall.on) {
    const PolicyDescription* p = find_kv_policy(kv.policy);
    if (p && !p->prunes) bad("kv_recall", "the '" + kv.policy + "' policy evicts nothing, so there is nothing to recall");
  }
  // The budget rules, then the policies' own knobs (a policy checks the finer rules, e.g. odd).
  for (const PolicyKnob& k : kv_shared_params()) std::visit(KnobField{body, k, kv.params}, k.member);
  for (const PolicyKnob& k : kv_policy_knobs()) std::visit(KnobField{body, k, kv.params}, k.member);
}

}  // namespace

CompletionRequest parse_generation_fields(const json& body, bool chat, const Model& model,
                                          const RequestDefaults& defaults, const std::string* raw_body) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  check_request_fields(body, chat);
  CompletionRequest r;
  r.chat = chat;
  // model, user and safety_identifier select or track nothing here (one model, no accounts).
  for (const char* name : {"model", "user", "safety_identifier"})
    if (const json* v = field(body, name); v && !v->is_string()) bad(name, "must be a string");
  if (chat) r.metadata = metadata_of(body);
  r.stream = boolean(body, "stream", false);
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) bad("stream_options", "must be an object");
    for (auto it = so->begin(); it != so->end(); ++it)  // include_obfuscation: false asks for nothing
      if (it.key() != "include_usage" && !(it.key() == "include_obfuscation" && it->is_boolean() && !it->get<bool>()))
        bad("stream_options." + it.key(), "is not supported (include_usage is)");
    r.include_usage = boolean(*so, "include_usage", false);
  }
  r.n = static_cast<int>(integer(body, "n", 1, 1, kMaxChoices));
  if (chat) {
    // logprobs: true|false, top_logprobs: 0..20 alternatives (which need logprobs).
    const bool want = boolean(body, "logprobs", false);
    const int64_t top = integer(body, "top_logprobs", -1, 0, kMaxTopLogprobs);
    if (top >= 0 && !want) bad("top_logprobs", "needs 'logprobs': true");
    if (want) r.logprobs = static_cast<int>(std::max<int64_t>(top, 0));
  } else {
    // logprobs: null or 0..20 (the sampled token's and that many alternatives); echo: bool.
    r.logprobs = static_cast<int>(integer(body, "logprobs", -1, 0, kMaxTopLogprobs));
    r.echo = boolean(body, "echo", false);
    if (r.echo && r.logprobs >= 0 && r.stream)
      bad("echo", "with 'logprobs' is answered whole: send 'stream': false (the prompt's log-probabilities come "
                  "with the reply)");
  }
  r.options.logprobs = r.logprobs;
  if (r.echo) r.options.prompt_logprobs = r.logprobs;

  const int64_t limit = defaults.max_tokens_limit > 0 ? defaults.max_tokens_limit : std::numeric_limits<int32_t>::max();
  int64_t max_tokens = std::min(defaults.max_tokens, limit);
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    max_tokens = integer(body, name, max_tokens, 0, std::numeric_limits<int32_t>::max());
    if (max_tokens > limit)
      bad(name, "is " + std::to_string(max_tokens) + ", more than this server generates for one request (" +
                    std::to_string(limit) + ", --max-tokens-limit)");
  }
  r.options.n_predict = max_tokens;
  r.options.stop = stop_list(body);
  r.options.stop_at_eog = !boolean(body, "ignore_eos", false);  // llama-server's field, for benchmarks

  const SamplerParams& d = defaults.sampling;
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  r.sampling.temperature = static_cast<float>(number(body, "temperature", d.temperature, 0, 2));
  r.sampling.top_p = static_cast<float>(number(body, "top_p", d.top_p, 0, 1));
  r.sampling.top_k = static_cast<int>(integer(body, "top_k", d.top_k, 0, kIntMax));
  r.sampling.min_p = static_cast<float>(number(body, "min_p", d.min_p, 0, 1));
  r.sampling.repeat_penalty = static_cast<float>(number(body, "repeat_penalty", d.repeat_penalty, 1e-6, 1e6));
  r.sampling.repeat_last_n = static_cast<int>(integer(body, "repeat_last_n", d.repeat_last_n, -1, kIntMax));
  r.sampling.frequency_penalty = static_cast<float>(number(body, "frequency_penalty", d.frequency_penalty, -2, 2));
  r.sampling.presence_penalty = static_cast<float>(number(body, "presence_penalty", d.presence_penalty, -2, 2));
  r.sampling.logit_bias = field(body, "logit_bias") ? logit_bias_of(body, model.config().vocab_size) : d.logit_bias;
  // No seed: the server's --seed, else a fresh one, returned with the reply so the request can
  // be repeated.
  const int64_t seed_max = std::numeric_limits<int64_t>::max();
  r.sampling.seed = field(body, "seed")   ? static_cast<uint64_t>(integer(body, "seed", 0, 0, seed_max))
                    : defaults.seed ? *defaults.seed
                                    : random_seed();

  if (field(body, "response_format") || field(body, "grammar"))
    r.options.grammar = grammar_of_request(body, raw_body, vocab_of(model, defaults), defaults.grammars.get());

  r.kv = defaults.kv;
  apply_kv_fields(body, r.kv);
  return r;
}

void force_tool_calls(CompletionRequest& r, const Model& model, const ChatPrompt& chat_prompt,
                      const RequestDefaults& defaults) {
  if (!r.tools || !r.tools->forces_calls()) return;
  if (r.options.grammar)
    bad("tool_choice", "forces a call, which cannot be combined with 'response_format' or 'grammar' (send one of them)");
  r.options.grammar = tool_grammar(*r.tools, r.prompt_text, chat_prompt.template_source(), vocab_of(model, defaults),
                                   defaults.grammars.get());
}

CompletionRequest parse_completion_request(const json& body, bool chat, const Model& model,
                                           const ChatPrompt& chat_prompt, const RequestDefaults& defaults,
                                           const std::string* raw_body) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  CompletionRequest r = parse_generation_fields(body, chat, model, defaults, raw_body);
  // (tools and tool_choice on /v1/completions are refused by check_request_fields.)
  if (chat) r.tools = tools_of_request(body, raw_body, chat_prompt.template_source());
  r.prompt = chat ? prompt_of_chat(body, chat_prompt, r.tools.get(), &r.prompt_text)
                  : prompt_of_completion(body, model, &r.prompt_text);
  if (r.prompt.empty()) bad(chat ? "messages" : "prompt", "gives no tokens");
  force_tool_calls(r, model, chat_prompt, defaults);
  // Prompt log-probabilities are one record per prompt token: up to the context, not for a
  // prompt that only a compressing policy can take in.
  const int64_t context = model.config().context_length;
  if (r.options.prompt_logprobs >= 0 && context > 0 && static_cast<int64_t>(r.prompt.size()) > context)
    bad("echo", "with 'logprobs' gives the log-probabilities of every prompt token, for prompts up to the context (" +
                    std::to_string(context) + " tokens); this one has " + std::to_string(r.prompt.size()));
  return r;
}

}  // namespace triattn::server
