// tiktoken tokenizer.model: one "base64(token bytes) rank" line per token, ranks 0..N-1.
// There is no merge list (ranks order the merges) and the special tokens live outside the
// file: Llama 3 puts 256 of them right after the last rank.
#include <filesystem>

#include "core/error.h"
#include "tokenizer/bpe_byte_map.h"
#include "tokenizer/bpe_hf_config.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pretokenize.h"
#include "core/read_file.h"

namespace triattn {
namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with '=' padding; returns false on any malformed input.
bool base64_decode(std::string_view in, std::string& out) {
  out.clear();
  if (in.empty() || in.size() % 4 != 0) return false;
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = in[i + k];
      if (c == '=') {
        if (i + 4 != in.size() || k < 2) return false;  // padding only at the very end
        v[k] = 0;
        ++pad;
      } else {
        if (pad) return false;  // data after padding
        v[k] = base64_value(c);
        if (v[k] < 0) return false;
      }
    }
    const uint32_t w = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out += char(w >> 16);
    if (pad < 2) out += char((w >> 8) & 0xFF);
    if (pad < 1) out += char(w & 0xFF);
  }
  return true;
}

// Meta's Llama 3 special tokens, ids n_regular + index.
std::vector<std::string> llama3_special_tokens() {
  std::vector<std::string> s = {
      "<|begin_of_text|>",
      "<|end_of_text|>",
      "<|reserved_special_token_0|>",
      "<|reserved_special_token_1|>",
      "<|reserved_special_token_2|>",
      "<|reserved_special_token_3|>",
      "<|start_header_id|>",
      "<|end_header_id|>",
      "<|reserved_special_token_4|>",
      "<|eot_id|>",
  };
  for (int i = 5; i < 256 - 5; ++i) s.push_back("<|reserved_special_token_" + std::to_string(i) + "|>");
  return s;
}

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer_tiktoken(const std::string& path) {
  const std::string data = read_file(path);
  BpeSpec spec;
  spec.source = path;
  std::string bytes;
  size_t line_no = 0;
  for (size_t pos = 0; pos < data.size();) {
    size_t eol = data.find('\n', pos);
    if (eol == std::string::npos) eol = data.size();
    std::string_view line(data.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos) fail(path, ":", line_no, ": expected 'base64 rank'");
    const std::string_view b64 = line.substr(0, sp), rank_s = line.substr(sp + 1);
    if (!base64_decode(b64, bytes) || bytes.empty()) fail(path, ":", line_no, ": invalid base64 '", b64, "'");
    size_t rank = 0;
    if (rank_s.empty() || rank_s.size() > 9) fail(path, ":", line_no, ": invalid rank '", rank_s, "'");
    for (char c : rank_s) {
      if (c < '0' || c > '9') fail(path, ":", line_no, ": invalid rank '", rank_s, "'");
      rank = rank * 10 + size_t(c - '0');
    }
    // Ranks are token ids; they must be dense and in order for ids to mean anything.
    if (rank != spec.tokens.size()) {
      fail(path, ":", line_no, ": rank ", rank, " where ", spec.tokens.size(), " was expected (ranks must be 0, 1, 2, ...)");
    }
    spec.tokens.push_back(bpe_bytes_to_text(bytes));
  }
  if (spec.tokens.empty()) fail(path, ": no tokens");
  const size_t n_regular = spec.tokens.size();
  spec.kinds.assign(n_regular, BpeTokenKind::Normal);
  spec.merges_from_ranks = true;

  auto fam = pretokenizer_family("llama-bpe");
  spec.pre_regexes = fam->regexes;
  spec.ignore_merges = true;  // tiktoken returns a piece found in the vocabulary as-is

  const auto dir = std::filesystem::path(path).parent_path().string();
  const std::string cfg_dir = dir.empty() ? "." : dir;
  const BpeHfExtras extras = read_bpe_hf_extras(cfg_dir);
  if (!extras.added_tokens.empty()) {
    apply_added_tokens(spec, extras.added_tokens);
  } else {
    std::vector<BpeAddedToken> added;
    const auto names = llama3_special_tokens();
    for (size_t i = 0; i < names.size(); ++i) added.push_back(BpeAddedToken{int32_t(n_regular + i), names[i], true, false, false});
    apply_added_tokens(spec, added);
  }
  spec.bos_id = find_token_id(spec, "<|begin_of_text|>");
  spec.eos_id = find_token_id(spec, "<|end_of_text|>");
  spec.eot_id = find_token_id(spec, "<|eot_id|>");
  spec.eom_id = find_token_id(spec, "<|eom_id|>");
  spec.add_bos = true;  // Llama 3 always starts with <|begin_of_text|>
  apply_hf_config(spec, read_hf_tokenizer_config(cfg_dir));
  return make_bpe_tokenizer(spec);
}

}  // namespace triattn
