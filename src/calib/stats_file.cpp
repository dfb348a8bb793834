#include "calib/stats_file.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "calib/pt_stats.h"
#include "core/error.h"
#include "formats/safetensors.h"

namespace triattn {

uint64_t fnv1a64_tokens(std::span<const int32_t> tokens) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int32_t t : tokens) {
    const uint32_t u = static_cast<uint32_t>(t);
    for (int b = 0; b < 4; ++b) {
      h ^= (u >> (8 * b)) & 0xFF;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

std::string format_input_hash(uint64_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string describe_rope_scaling(const RopeScaling& s) {
  std::ostringstream os;
  switch (s.type) {
    case RopeScalingType::None: return "none";
    case RopeScalingType::Linear: os << "linear factor=" << s.factor; break;
    case RopeScalingType::Llama3:
      os << "llama3 factor=" << s.factor << " original_context=" << s.original_context
         << " low_freq_factor=" << s.low_freq_factor << " high_freq_factor=" << s.high_freq_factor;
      break;
    case RopeScalingType::Yarn:
      os << "yarn factor=" << s.factor << " original_context=" << s.original_context << " beta_fast=" << s.beta_fast
         << " beta_slow=" << s.beta_slow << " attn_factor=" << s.attn_factor;
      break;
  }
  return os.str();
}

StatsInfo stats_info_for(const ModelConfig& cfg, int64_t token_count, uint64_t input_hash) {
  StatsInfo i;
  i.architecture = cfg.arch;
  i.model_name = cfg.name;
  i.n_layers = cfg.n_layers;
  i.n_heads = cfg.n_heads;
  i.n_kv_heads = cfg.n_kv_heads;
  i.head_dim = cfg.head_dim;
  i.rope_theta = cfg.rope_theta;
  i.rope_scaling = describe_rope_scaling(cfg.rope_scaling);
  i.rope_attn_factor = cfg.rope_attn_factor();
  i.rope_freqs = cfg.rope_freqs();
  i.token_count = token_count;
  i.input_hash = format_input_hash(input_hash);
  return i;
}

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::vector<float> mrl(const std::vector<float>& re, const std::vector<float>& im, const std::vector<float>& abs) {
  std::vector<float> r(re.size());
  for (size_t i = 0; i < r.size(); ++i)
    r[i] = abs[i] > 0 ? static_cast<float>(std::hypot(re[i], im[i]) / abs[i]) : 0.0f;
  return r;
}

const std::string& meta(const std::map<std::string, std::string>& m, const std::string& key, const std::string& path) {
  auto it = m.find(key);
  if (it == m.end()) fail(path, ": stats metadata has no '", key, "'");
  return it->second;
}

int64_t meta_int(const std::map<std::string, std::string>& m, const std::string& key, const std::string& path) {
  const std::string& s = meta(m, key, path);
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end) fail(path, ": stats metadata '", key, "' is not an integer: '", s, "'");
  return v;
}

double meta_double(const std::map<std::string, std::string>& m, const std::string& key, const std::string& path) {
  const std::string& s = meta(m, key, path);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end) fail(path, ": stats metadata '", key, "' is not a number: '", s, "'");
  return v;
}

std::vector<float> read_f32(const SafetensorsFile& f, const std::string& name, const std::vector<int64_t>& shape) {
  const SafetensorsTensor* t = f.find(name);
  if (!t) fail(f.path(), ": stats tensor '", name, "' is missing");
  if (t->type != DType::F32) fail(f.path(), ": stats tensor '", name, "' is ", dtype_name(t->type), ", expected f32");
  if (t->shape != shape) {
    std::ostringstream a, b;
    for (auto d : t->shape) a << (a.tellp() ? "," : "") << d;
    for (auto d : shape) b << (b.tellp() ? "," : "") << d;
    fail(f.path(), ": stats tensor '", name, "' has shape [", a.str(), "], expected [", b.str(), "]");
  }
  std::vector<float> v(t->nbytes / 4);
  std::memcpy(v.data(), t->data, t->nbytes);
  return v;
}

LoadedStats read_safetensors_stats(const std::string& path) {
  auto f = SafetensorsFile::open(path);
  const auto& m = f->metadata();
  auto fmt = m.find("format");
  if (fmt == m.end() || fmt->second != kStatsFormatName)
    fail(path, ": not a triattn stats file (metadata 'format' is '", fmt == m.end() ? "" : fmt->second,
         "', expected '", kStatsFormatName, "')");
  const int64_t version = meta_int(m, "format_version", path);
  if (version < 1 || version > kStatsFormatVersion)
    fail(path, ": stats format version ", version, " is not supported (this build reads up to ", kStatsFormatVersion, ")");
  LoadedStats out;
  StatsInfo& i = out.info;
  i.architecture = meta(m, "architecture", path);
  if (auto it = m.find("model_name"); it != m.end()) i.model_name = it->second;
  i.n_layers = static_cast<int>(meta_int(m, "n_layers", path));
  i.n_heads = static_cast<int>(meta_int(m, "n_heads", path));
  i.n_kv_heads = static_cast<int>(meta_int(m, "n_kv_heads", path));
  i.head_dim = static_cast<int>(meta_int(m, "head_dim", path));
  i.rope_theta = meta_double(m, "rope_theta", path);
  i.rope_scaling = meta(m, "rope_scaling", path);
  i.rope_attn_factor = meta_double(m, "rope_attn_factor", path);
  i.token_count = meta_int(m, "token_count", path);
  i.input_hash = meta(m, "input_hash", path);
  if (i.n_layers <= 0 || i.n_heads <= 0 || i.n_kv_heads <= 0 || i.head_dim <= 0 || i.head_dim % 2)
    fail(path, ": stats metadata has an invalid shape (", i.n_layers, " layers, ", i.n_heads, "/", i.n_kv_heads,
         " heads, head_dim ", i.head_dim, ")");
  const int64_t half = i.head_dim / 2;
  const std::vector<int64_t> qs = {i.n_layers, i.n_heads, half}, ks = {i.n_layers, i.n_kv_heads, half};
  auto s = std::make_shared<HeadStats>();
  s->n_layers = i.n_layers;
  s->n_heads = i.n_heads;
  s->n_kv_heads = i.n_kv_heads;
  s->head_dim = i.head_dim;
  s->q_mean_real = read_f32(*f, "q_mean_real", qs);
  s->q_mean_imag = read_f32(*f, "q_mean_imag", qs);
  s->q_abs_mean = read_f32(*f, "q_abs_mean", qs);
  s->k_mean_real = read_f32(*f, "k_mean_real", ks);
  s->k_mean_imag = read_f32(*f, "k_mean_imag", ks);
  s->k_abs_mean = read_f32(*f, "k_abs_mean", ks);
  i.rope_freqs = read_f32(*f, "rope_freqs", {half});
  for (float v : s->q_abs_mean)
    if (!std::isfinite(v) || v < 0) fail(path, ": q_abs_mean holds an invalid value ", v);
  out.stats = std::move(s);
  return out;
}

}  // namespace

void write_stats_file(const std::string& path, const HeadStats& s, const StatsInfo& i) {
  const int64_t half = s.head_dim / 2;
  const std::vector<int64_t> qs = {s.n_layers, s.n_heads, half}, ks = {s.n_layers, s.n_kv_heads, half};
  SafetensorsWriter w;
  w.set_metadata("format", kStatsFormatName);
  w.set_metadata("format_version", std::to_string(kStatsFormatVersion));
  w.set_metadata("architecture", i.architecture);
  w.set_metadata("model_name", i.model_name);
  w.set_metadata("n_layers", std::to_string(s.n_layers));
  w.set_metadata("n_heads", std::to_string(s.n_heads));
  w.set_metadata("n_kv_heads", std::to_string(s.n_kv_heads));
  w.set_metadata("head_dim", std::to_string(s.head_dim));
  w.set_metadata("rope_theta", num(i.rope_theta));
  w.set_metadata("rope_scaling", i.rope_scaling);
  w.set_metadata("rope_attn_factor", num(i.rope_attn_factor));
  w.set_metadata("token_count", std::to_string(i.token_count));
  w.set_metadata("input_hash", i.input_hash);
  w.set_metadata("pairing", "half");
  auto add = [&](const char* name, const std::vector<float>& v, const std::vector<int64_t>& shape) {
    w.add(name, DType::F32, shape, v.data(), v.size() * sizeof(float));
  };
  add("q_mean_real", s.q_mean_real, qs);
  add("q_mean_imag", s.q_mean_imag, qs);
  add("q_abs_mean", s.q_abs_mean, qs);
  add("q_mrl", mrl(s.q_mean_real, s.q_mean_imag, s.q_abs_mean), qs);
  add("k_mean_real", s.k_mean_real, ks);
  add("k_mean_imag", s.k_mean_imag, ks);
  add("k_abs_mean", s.k_abs_mean, ks);
  add("k_mrl", mrl(s.k_mean_real, s.k_mean_imag, s.k_abs_mean), ks);
  if (static_cast<int64_t>(i.rope_freqs.size()) != half)
    fail(path, ": ", i.rope_freqs.size(), " RoPE frequencies for head_dim ", s.head_dim);
  add("rope_freqs", i.rope_freqs, {half});
  w.write(path);
}

LoadedStats read_stats_any(const std::string& path) {
  char magic[4] = {};
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, ": cannot open stats file");
    in.read(magic, 4);
  }
  if (std::memcmp(magic, "PK\x03\x04", 4) == 0) {
    PtStats pt = read_pt_stats(path);
    LoadedStats out;
    out.official_pt = true;
    out.info.n_layers = pt.stats.n_layers;
    out.info.n_heads = pt.stats.n_heads;
    out.info.head_dim = pt.stats.head_dim;
    out.stats = std::make_shared<HeadStats>(std::move(pt.stats));
    return out;
  }
  return read_safetensors_stats(path);
}

void check_stats_match(const LoadedStats& loaded, const ModelConfig& cfg, const std::string& path) {
  const StatsInfo& i = loaded.info;
  std::vector<std::string> bad;
  auto cmp_int = [&](const char* field, int file, int model) {
    if (file != model) bad.push_back(std::string(field) + " " + std::to_string(file) + " (model: " + std::to_string(model) + ")");
  };
  cmp_int("n_layers", i.n_layers, cfg.n_layers);
  cmp_int("n_heads", i.n_heads, cfg.n_heads);
  cmp_int("head_dim", i.head_dim, cfg.head_dim);
  if (!loaded.official_pt) {  // the official .pt records none of these
    cmp_int("n_kv_heads", i.n_kv_heads, cfg.n_kv_heads);
    if (i.architecture != cfg.arch) bad.push_back("architecture '" + i.architecture + "' (model: '" + cfg.arch + "')");
    if (std::abs(i.rope_theta - cfg.rope_theta) > 1e-6 * std::abs(static_cast<double>(cfg.rope_theta)))
      bad.push_back("rope_theta " + num(i.rope_theta) + " (model: " + num(cfg.rope_theta) + ")");
    // Compare what scoring actually uses (ω_f after scaling), so equivalent descriptions of the
    // same scaling (HF rope_scaling vs GGUF rope_freqs factors) are not refused.
    if (i.head_dim == cfg.head_dim) {
      const auto freqs = cfg.rope_freqs();
      for (size_t f = 0; f < freqs.size() && f < i.rope_freqs.size(); ++f)
        if (std::abs(i.rope_freqs[f] - freqs[f]) > 1e-5f * std::abs(freqs[f])) {
          bad.push_back("rope scaling '" + i.rope_scaling + "' (model: '" + describe_rope_scaling(cfg.rope_scaling) +
                        "'; band " + std::to_string(f) + " frequency " + num(i.rope_freqs[f]) + " vs " + num(freqs[f]) + ")");
          break;
        }
    }
    if (std::abs(i.rope_attn_factor - cfg.rope_attn_factor()) > 1e-6)
      bad.push_back("rope_attn_factor " + num(i.rope_attn_factor) + " (model: " + num(cfg.rope_attn_factor()) + ")");
  }
  if (bad.empty()) return;
  std::string msg;
  for (const auto& b : bad) msg += (msg.empty() ? "" : ", ") + b;
  fail(path, ": stats file does not match the model ", cfg.name.empty() ? cfg.arch : "'" + cfg.name + "'", ": ", msg,
       i.model_name.empty() ? std::string() : " (the stats were calibrated on '" + i.model_name + "')",
       "; run `triattn calibrate` for this model");
}

std::shared_ptr<const HeadStats> load_stats(const std::string& path, const ModelConfig& cfg) {
  LoadedStats l = read_stats_any(path);
  check_stats_match(l, cfg, path);
  if (l.official_pt) {
    // The .pt does not record KV heads; the model does (needed for GQA grouping).
    auto s = std::make_shared<HeadStats>(*l.stats);
    s->n_kv_heads = cfg.n_kv_heads;
    return s;
  }
  return l.stats;
}

}  // namespace triattn
