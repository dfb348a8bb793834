// triattn info: what a model is, before running it: architecture and shapes, weight types
// and sizes, context, KV bytes per token, special tokens, the chat template in use, and the
// kernels' instruction set (detected, or TRIATTN_ISA's).
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "calib/stats_embedded.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/escape_bytes.h"
#include "cli/kernel_environment.h"
#include "core/error.h"
#include "model/kv_shape.h"

namespace triattn::cli {

namespace {

const char* rope_scaling_name(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::None: return "none";
    case RopeScalingType::Linear: return "linear";
    case RopeScalingType::Llama3: return "llama3";
    case RopeScalingType::Yarn: return "yarn";
  }
  return "?";
}

std::string format_of(const std::string& path) {
  if (std::filesystem::is_directory(path)) return "huggingface";
  return std::filesystem::path(path).extension() == ".gguf" ? "gguf" : "llama2c";
}

nlohmann::ordered_json token_json(const Tokenizer& tok, int32_t id) {
  if (id < 0) return nullptr;
  return {{"id", id}, {"text", tok.token_text(id)}};
}

}  // namespace

int cmd_info(const std::vector<std::string>& args) {
  CLI::App app{"Describe a model: architecture, shapes, weight types, context, special tokens, chat template",
               "triattn info"};
  std::string model_path;
  bool json = false;
  ChatPromptOptions chat_opt;
  app.add_option("-m,--model", model_path, "model: .gguf file, HF directory or llama2.c .bin")->required();
  app.add_option("--chat-template", chat_opt.template_path, "describe this chat template instead of the model's");
  app.add_flag("--json", json, "print one JSON object");
  if (int rc = parse(app, args); rc >= 0) return rc;

  // The weights stay in the file mapping: info reads shapes and types, not values.
  auto model = Model::load(model_path, {.repack = false, .threads = 1});
  // The kernels loading would choose on this machine (none are loaded here: no repacking).
  const std::vector<std::string> kernel_lines = kernel_choice_environment() == KernelChoiceMode::Isa
                                                    ? std::vector<std::string>{}
                                                    : cached_kernel_choices(model->weights(), kernel_cache_path());
  print_warnings(model->warnings());
  const ModelConfig& c = model->config();
  const Tokenizer& tok = model->tokenizer();
  const ChatPrompt prompt(tok, model_path, chat_opt, nullptr);
  // K and V rows of every (layer, KV head), per token, in the default f16 cache and, where
  // head_dim is whole 32-value blocks, in the q8_0 one (0 otherwise: --kv-type q8_0 refuses it).
  auto kv_bytes_per_token_in = [&](DType t) -> int64_t {
    int64_t bytes = 0;
    for (int l = 0; l < c.n_layers; ++l) {
      if (c.is_delta(l)) continue;
      if (c.layer_head_dim(l) % block_size(t) != 0) return 0;
      bytes += int64_t{2} * c.layer_kv_heads(l) * static_cast<int64_t>(row_bytes(t, c.layer_head_dim(l)));
    }
    return bytes;
  };
  // TriAttention statistics the model carries (used without --stats): where, and from what
  // input; a damaged set is named, not fatal (info describes the file as it is).
  nlohmann::ordered_json own_stats = nullptr;
  std::string own_stats_line = "none (give --stats FILE for TriAttention)";
  if (const EmbeddedStats where = find_embedded_stats(model_path)) {
    own_stats = {{"path", where.path}};
    try {
      const LoadedStats l = read_embedded_stats(where);
      own_stats["token_count"] = l.info.token_count;
      own_stats["input_hash"] = l.info.input_hash;
      own_stats["model_name"] = l.info.model_name;
      own_stats_line = "TriAttention statistics in " + where.path + " (" + std::to_string(l.info.token_count) +
                       " tokens, input " + l.info.input_hash + ")";
    } catch (const Error& e) {
      own_stats["error"] = e.what();
      own_stats_line = std::string("TriAttention statistics present but unreadable: ") + e.what();
    }
  }
  const int64_t kv_bytes_per_token = kv_bytes_per_token_in(DType::F16);
  const int64_t kv_bytes_per_token_q8 = kv_bytes_per_token_in(DType::Q8_0);

  nlohmann::ordered_json eog = nlohmann::ordered_json::array();
  for (int32_t id : tok.eog_ids()) eog.push_back(token_json(tok, id));
  nlohmann::ordered_json j = {
      {"path", model_path},
      {"format", format_of(model_path)},
      {"architecture", c.arch},
      {"name", c.name},
      {"layers", c.n_layers},
      {"n_embd", c.n_embd},
      {"n_ff", c.n_ff},
      {"n_heads", c.n_heads},
      {"n_kv_heads", c.n_kv_heads},
      {"head_dim", c.head_dim},
      {"vocab_size", c.vocab_size},
      {"context_length", c.context_length},
      {"rope_theta", c.rope_theta},
      {"rope_scaling", rope_scaling_name(c.rope_scaling.type)},
      {"rope_scaling_factor", c.rope_scaling.factor},
      {"rms_eps", c.rms_eps},
      {"qkv_bias", c.qkv_bias},
      {"qk_norm", c.qk_norm},
      {"tied_embeddings", c.tied_embeddings},
      {"sliding_window", c.sliding_window},
      {"sliding_layers", static_cast<int>(c.n_layers - c.full_attention_layers().size())},
      {"full_attention_layers", c.full_attention_layers()},
      {"rope_theta_local", c.rope_theta_local},
      {"attn_softcap", c.attn_softcap},
      {"final_softcap", c.final_softcap},
      {"weight_type", model->weight_type_name()},
      {"weight_bytes", model->weight_bytes()},
      {"active_weight_bytes", model->active_weight_bytes()},
      {"n_expert", c.n_expert},
      {"n_expert_used", c.n_expert_used},
      {"n_ff_expert", c.n_ff_expert},
      {"kv_bytes_per_token_f16", kv_bytes_per_token},
      {"recurrent_state_bytes_per_sequence", sequence_state_bytes(c)},
      {"kv_bytes_per_token_q8_0", kv_bytes_per_token_q8 ? nlohmann::ordered_json(kv_bytes_per_token_q8) : nullptr},
      {"tokenizer",
       {{"vocab_size", tok.vocab_size()},
        {"add_bos", tok.add_bos_default()},
        {"bos", token_json(tok, tok.bos_id())},
        {"eos", token_json(tok, tok.eos_id())},
        {"end_of_generation", eog}}},
      {"chat_template", {{"origin", prompt.origin()}, {"fallback", prompt.is_fallback()}}},
      {"kernels", isa_choice()},
      {"kernel_choices", kernel_lines},
      {"triattention_stats", own_stats},
  };
  if (json) {
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  // Token texts may hold newlines and control bytes (llama2.c's BOS is "\n<s>\n"): escaped, as
  // `tokenize` shows them, so each field stays on its line.
  auto tok_str = [&](int32_t id) {
    return id < 0 ? std::string("none") : std::to_string(id) + " '" + escape_bytes(tok.token_text(id)) + "'";
  };
  std::cout << "model         " << model_path << " (" << j["format"].get<std::string>() << ")\n"
            << "architecture  " << c.arch << " '" << c.name << "'\n"
            << "shape         " << c.n_layers << " layers, n_embd " << c.n_embd << ", ffn " << c.n_ff << ", heads "
            << c.n_heads << " / " << c.n_kv_heads << " KV, head_dim " << c.head_dim << ", vocab " << c.vocab_size
            << "\n"
            << "attention     rope theta " << c.rope_theta << ", scaling " << rope_scaling_name(c.rope_scaling.type);
  if (c.rope_scaling.type != RopeScalingType::None) std::cout << " x" << c.rope_scaling.factor;
  if (c.qkv_bias) std::cout << ", qkv bias";
  if (c.qk_norm) std::cout << ", q/k norm";
  if (c.tied_embeddings) std::cout << ", tied embeddings";
  if (c.has_sliding_layers()) {
    std::cout << "\nlayers        " << c.n_layers - c.full_attention_layers().size() << " sliding-window (window "
              << c.sliding_window;
    if (c.rope_theta_local > 0) std::cout << ", rope theta " << c.rope_theta_local;
    if (c.layer_shape_differs())  // Gemma 4: the sliding layers' own KV heads and head size
      std::cout << ", " << (c.n_kv_heads_swa > 0 ? c.n_kv_heads_swa : c.n_kv_heads) << " KV heads of " << (c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim);
    std::cout << "), " << c.full_attention_layers().size() << " full attention";
    if (c.k_eq_v) std::cout << " (V = K)";
    {  // proportional RoPE: bands whose divisor stops them (1e30, or infinite)
      int still = 0;
      for (float f : c.rope_freq_factors) still += f > 1e29f;
      if (still > 0) std::cout << ", " << c.rotary_dims() / 2 - still << " of " << c.rotary_dims() / 2 << " pairs rotating";
    }
  }
  if (c.attn_softcap > 0 || c.final_softcap > 0)
    std::cout << "; soft-caps: attention " << c.attn_softcap << ", logits " << c.final_softcap;
  if (c.has_delta_layers()) {
    const DeltaNetConfig& d = c.delta;
    std::cout << "\nlayers        " << c.n_layers - kv_layer_count(c) << " Gated DeltaNet (key/value heads "
              << d.n_k_heads << "/" << d.n_v_heads << " of " << d.head_k_dim << "/" << d.head_v_dim << ", conv "
              << d.conv_kernel << "), " << kv_layer_count(c) << " gated attention with " << c.rotary_dims() << " of "
              << c.head_dim << " dims rotated; recurrent state " << sequence_state_bytes(c) / 1024.0
              << " KiB per sequence";
  }
  if (c.has_moe_layers())
    std::cout << "\nexperts       " << c.n_expert << " of ffn " << c.n_ff_expert << ", " << c.n_expert_used
              << " used per token" << (c.expert_weights_norm ? " (weights renormalised)" : "");
  std::cout << "\n"
            << "context       " << c.context_length << " tokens; KV cache " << kv_bytes_per_token / 1024.0
            << " KiB per token (f16)";
  if (kv_bytes_per_token_q8) std::cout << ", " << kv_bytes_per_token_q8 / 1024.0 << " KiB (q8_0)";
  std::cout << "\n"
            << "weights       " << model->weight_type_name() << ", " << model->active_weight_bytes() / 1048576.0
            << " MiB read per token";
  if (c.has_moe_layers()) std::cout << " (the active experts; " << model->weight_bytes() / 1048576.0 << " MiB in all)";
  std::cout << "\n"
            << "tokenizer     " << tok.vocab_size() << " tokens, BOS " << tok_str(tok.bos_id())
            << (tok.add_bos_default() ? " (added)" : " (not added)") << ", EOS " << tok_str(tok.eos_id()) << "\n"
            << "end tokens   ";
  for (int32_t id : tok.eog_ids()) std::cout << " " << tok_str(id);
  std::cout << "\nchat template " << prompt.origin() << (prompt.is_fallback() ? " (the model has none)" : "") << "\n"
            << "kernels       " << isa_choice() << "\n";
  for (const std::string& line : kernel_lines) std::cout << "kernel choice " << line << "\n";
  std::cout << "statistics    " << own_stats_line << "\n";
  return 0;
}

}  // namespace triattn::cli
