#include "calib/stats_file.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>

#include "calib/atomic_write.h"
#include "calib/npz_stats.h"
#include "calib/pt_stats.h"
#include "calib/stats_formats.h"
#include "calib/tria_stats.h"
#include "calib/stats_container.h"
#include "calib/stats_file_kind.h"
#include "calib/stats_values.h"
#include "core/error.h"
#include "formats/safetensors.h"
#include "model/weights_fingerprint.h"

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
  i.rotary_dim = cfg.rotary_dims() < cfg.head_dim ? cfg.rotary_dims() : 0;
  i.rope_theta = cfg.rope_theta;
  i.rope_scaling = describe_rope_scaling(cfg.rope_scaling);
  i.rope_attn_factor = cfg.rope_attn_factor();
  i.rope_freqs = cfg.rope_freqs();
  if (cfg.has_uncompressed_layers()) i.scored_layers = cfg.full_attention_layers();
  i.token_count = token_count;
  i.input_hash = format_input_hash(input_hash);
  return i;
}

std::string exact_number_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string join_layers(const std::vector<int>& layers) {
  std::string s;
  for (int l : layers) s += (s.empty() ? "" : ",") + std::to_string(l);
  return s;
}

namespace {

// "1,3,5": increasing layer indices below n_layers.
std::vector<int> parse_layers(const std::string& s, int n_layers, const std::string& path) {
  std::vector<int> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, comma - at);
    int v = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 0 || v >= n_layers ||
        (!out.empty() && v <= out.back()))
      fail(path, ": stats metadata 'scored_layers' is '", s, "' (want increasing layer indices below ", n_layers,
           ", comma-separated)");
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}


const std::string& meta(const std::map<std::string, std::string>& m, const std::string& key, const std::string& path) {
  auto it = m.find(key);
  if (it == m.end()) fail(path, ": stats metadata has no '", key, "' (the file is damaged; recalibrate with `triattn calibrate`)");
  return it->second;
}

// An integer in [lo, hi]: no blanks, no overflow (strtoll saturates), no silent narrowing.
int64_t meta_int(const std::map<std::string, std::string>& m, const std::string& key, const std::string& path,
                 int64_t lo, int64_t hi) {
  const std::string& s = meta(m, key, path);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || *end || errno == ERANGE)
    fail(path, ": stats metadata '", key, "' is not an integer: '", s, "'");
  if (v < lo || v > hi) fail(path, ": stats metadata '", key, "' is ", v, ", outside ", lo, "..", hi);
  return v;
}

// A finite number greater than zero (RoPE theta and attention factor: a NaN would compare
// unequal to nothing and pass every match check).
double meta_positive(const std::map<std::string, std::string>& m, const std::string& key, const std::string& path) {
  const std::string& s = meta(m, key, path);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || *end)
    fail(path, ": stats metadata '", key, "' is not a number: '", s, "'");
  if (!std::isfinite(v) || v <= 0) fail(path, ": stats metadata '", key, "' is ", s, " (must be finite and positive)");
  return v;
}

// The format a converted file names, with the file in the message when it is unknown.
StatsFormat parse_stats_format_for(const std::string& name, const std::string& path) {
  try {
    return parse_stats_format(name);
  } catch (const Error& e) {
    fail(path, ": stats metadata 'source_format': ", e.what());
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  return os.str();
}

std::vector<float> read_f32(const StatsContainer& f, const std::string& name, const std::vector<int64_t>& shape) {
  const StatsTensorRef* t = f.find(name);
  if (!t) fail(f.path, ": stats tensor '", name, "' is missing");
  if (t->type != DType::F32) fail(f.path, ": stats tensor '", name, "' is ", dtype_name(t->type), ", expected f32");
  if (t->shape != shape)
    fail(f.path, ": stats tensor '", name, "' has shape [", shape_text(t->shape), "], expected [", shape_text(shape), "]");
  std::vector<float> v(t->nbytes / 4);
  std::memcpy(v.data(), t->data, t->nbytes);
  return v;
}

// Every f32 tensor of the file (q_mrl/k_mrl and any extra one included), by the same rules.
void check_file_values(const StatsContainer& f) {
  std::vector<StatsTensorValues> all;
  for (const StatsTensorRef& t : f.tensors)
    if (t.type == DType::F32)
      all.push_back({t.name, t.shape, {static_cast<const float*>(t.data), t.nbytes / sizeof(float)}});
  const std::string bad = first_invalid_stats_value(all);
  if (!bad.empty()) fail(f.path, ": stats ", bad, "; the file is damaged: recalibrate with `triattn calibrate`");
}

LoadedStats read_safetensors_stats(const std::string& path) {
  auto file = SafetensorsFile::open(path);
  StatsContainer c{path, file->metadata(), {}};
  for (const SafetensorsTensor& t : file->tensors()) c.tensors.push_back({t.name, t.type, t.shape, t.data, t.nbytes});
  return read_stats_container(c);
}

}  // namespace

const StatsTensorRef* StatsContainer::find(const std::string& name) const {
  for (const StatsTensorRef& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

LoadedStats read_stats_container(const StatsContainer& f) {
  const std::string& path = f.path;
  const auto& m = f.metadata;
  auto fmt = m.find("format");
  if (fmt == m.end() || fmt->second != kStatsFormatName)
    fail(path, ": not a triattn stats file (a safetensors file whose metadata 'format' is '",
         fmt == m.end() ? "" : fmt->second, "', not '", kStatsFormatName,
         "': model weights perhaps; stats files come from `triattn calibrate`)");
  LoadedStats out;
  out.format_version = static_cast<int>(meta_int(m, "format_version", path, 1, std::numeric_limits<int>::max()));
  if (out.format_version > kStatsFormatVersion)
    fail(path, ": stats format version ", out.format_version, " is not supported (this build reads up to ",
         kStatsFormatVersion, "; update triattn or recalibrate with this build)");
  if (auto it = m.find("pairing"); it != m.end() && it->second != "half")
    fail(path, ": stats metadata 'pairing' is '", it->second, "'; only \"half\" (band f = x[f], x[f + d/2]) is defined");
  StatsInfo& i = out.info;
  // A converted file (`stats convert`) holds what its source format knew: the fields that
  // format lacks are absent, read as unknown, and never compared with a model.
  if (auto it = m.find("source_format"); it != m.end()) {
    i.source_format = it->second;
    const StatsFormat src = parse_stats_format_for(it->second, path);
    if (src == StatsFormat::Triattn)
      fail(path, ": stats metadata 'source_format' is '", it->second, "' (a converted file names a foreign format)");
  }
  const bool converted = !i.source_format.empty();
  auto known = [&](const char* key) { return !converted || m.count(key) > 0; };
  // Shapes far beyond any model, so products below cannot overflow and ints never narrow.
  constexpr int64_t kMaxDim = 1 << 20;
  if (known("architecture")) i.architecture = meta(m, "architecture", path);
  if (auto it = m.find("model_name"); it != m.end()) i.model_name = it->second;
  i.n_layers = static_cast<int>(meta_int(m, "n_layers", path, 1, kMaxDim));
  i.n_heads = static_cast<int>(meta_int(m, "n_heads", path, 1, kMaxDim));
  if (known("n_kv_heads")) i.n_kv_heads = static_cast<int>(meta_int(m, "n_kv_heads", path, 1, kMaxDim));
  i.head_dim = static_cast<int>(meta_int(m, "head_dim", path, 2, kMaxDim));
  if (i.head_dim % 2) fail(path, ": stats metadata 'head_dim' is ", i.head_dim, " (must be even: bands are pairs)");
  if (m.count("rotary_dim")) {
    i.rotary_dim = static_cast<int>(meta_int(m, "rotary_dim", path, 2, i.head_dim));
    if (i.rotary_dim % 2) fail(path, ": stats metadata 'rotary_dim' is ", i.rotary_dim, " (must be even: bands are pairs)");
    if (i.rotary_dim == i.head_dim) i.rotary_dim = 0;
  }
  if (known("rope_theta")) i.rope_theta = meta_positive(m, "rope_theta", path);
  if (known("rope_scaling")) i.rope_scaling = meta(m, "rope_scaling", path);
  i.rope_attn_factor = known("rope_attn_factor") ? meta_positive(m, "rope_attn_factor", path) : 0;
  if (known("token_count")) {
    i.token_count = meta_int(m, "token_count", path, 0, std::numeric_limits<int64_t>::max());
    if (i.token_count < kMinCalibrationTokens)
      fail(path, ": the statistics were calibrated on ", i.token_count, " token(s), fewer than the ",
           kMinCalibrationTokens, " needed to say anything about the model; recalibrate with a longer --input");
  }
  if (known("input_hash")) i.input_hash = meta(m, "input_hash", path);
  if (auto it = m.find("scored_layers"); it != m.end()) i.scored_layers = parse_layers(it->second, i.n_layers, path);
  const int64_t half = i.rotary_dims() / 2;
  const std::vector<int64_t> qs = {i.n_layers, i.n_heads, half}, ks = {i.n_layers, i.n_kv_heads, half};
  auto s = std::make_shared<HeadStats>();
  s->n_layers = i.n_layers;
  s->n_heads = i.n_heads;
  s->n_kv_heads = i.n_kv_heads;
  s->head_dim = i.head_dim;
  s->rotary_dim = i.rotary_dim;
  s->q_mean_real = read_f32(f, "q_mean_real", qs);
  s->q_mean_imag = read_f32(f, "q_mean_imag", qs);
  s->q_abs_mean = read_f32(f, "q_abs_mean", qs);
  read_f32(f, "q_mrl", qs);  // derived, for analysis: only its shape and values are checked
  // Key statistics: always in a calibrated file; in a converted one, all or none (and only
  // with the KV head count they are shaped by).
  if (!converted || f.find("k_mean_real")) {
    if (i.n_kv_heads == 0) fail(path, ": stats tensors 'k_*' are present but metadata 'n_kv_heads' is not");
    s->k_mean_real = read_f32(f, "k_mean_real", ks);
    s->k_mean_imag = read_f32(f, "k_mean_imag", ks);
    s->k_abs_mean = read_f32(f, "k_abs_mean", ks);
    read_f32(f, "k_mrl", ks);
  } else {
    for (const char* k : {"k_mean_imag", "k_abs_mean", "k_mrl"})
      if (f.find(k)) fail(path, ": stats tensor '", k, "' is present without 'k_mean_real'");
  }
  if (known("rope_freqs") || f.find("rope_freqs")) i.rope_freqs = read_f32(f, "rope_freqs", {half});
  if (s->pass_dims() > 0) {
    s->q_pass_mean = read_f32(f, "q_pass_mean", {i.n_layers, i.n_heads, s->pass_dims()});
    s->q_pass_abs_mean = read_f32(f, "q_pass_abs_mean", {i.n_layers, i.n_heads});
  } else if (f.find("q_pass_mean") || f.find("q_pass_abs_mean")) {
    fail(path, ": stats tensors 'q_pass_*' are present but metadata 'rotary_dim' says every coordinate rotates");
  }
  if (f.find("weights_fingerprint"))
    i.weights_fingerprint = read_f32(f, "weights_fingerprint", {kWeightsFingerprintSize});
  check_file_values(f);
  out.stats = std::move(s);
  return out;
}

StatsPayload stats_payload(const HeadStats& s, const StatsInfo& i, const std::string& path) {
  // Statistics from a foreign format (source_format) may lack what it did not record.
  const bool converted = !i.source_format.empty();
  const int64_t half = s.bands();
  const std::vector<int64_t> qs = {s.n_layers, s.n_heads, half}, ks = {s.n_layers, s.n_kv_heads, half};
  if (s.rotary_dims() % 2 || s.rotary_dims() > s.head_dim || s.rotary_dims() <= 0)
    fail(path, ": rotary_dim ", s.rotary_dims(), " for head_dim ", s.head_dim);
  if (i.rotary_dims() != s.rotary_dims())
    fail(path, ": the statistics are for rotary_dim ", s.rotary_dims(), ", the model info says ", i.rotary_dims());
  if (!(converted && i.rope_freqs.empty()) && static_cast<int64_t>(i.rope_freqs.size()) != half)
    fail(path, ": ", i.rope_freqs.size(), " RoPE frequencies for rotary_dim ", s.rotary_dims());
  const size_t np = static_cast<size_t>(s.n_layers) * s.n_heads;
  if (s.pass_dims() > 0 && (s.q_pass_mean.size() != np * s.pass_dims() || s.q_pass_abs_mean.size() != np))
    fail(path, ": pass-query statistics hold ", s.q_pass_mean.size(), "/", s.q_pass_abs_mean.size(),
         " values, expected ", np * s.pass_dims(), "/", np);
  if (!i.weights_fingerprint.empty() && i.weights_fingerprint.size() != static_cast<size_t>(kWeightsFingerprintSize))
    fail(path, ": a weights fingerprint of ", i.weights_fingerprint.size(), " values, expected ", kWeightsFingerprintSize);
  const size_t nq = static_cast<size_t>(s.n_layers) * s.n_heads * half, nk = static_cast<size_t>(s.n_layers) * s.n_kv_heads * half;
  for (const auto* v : {&s.q_mean_real, &s.q_mean_imag, &s.q_abs_mean})
    if (v->size() != nq) fail(path, ": query statistics hold ", v->size(), " values, expected ", nq);
  const bool keys = !converted || !s.k_mean_real.empty() || !s.k_mean_imag.empty() || !s.k_abs_mean.empty();
  for (const auto* v : {&s.k_mean_real, &s.k_mean_imag, &s.k_abs_mean})
    if (keys && v->size() != nk) fail(path, ": key statistics hold ", v->size(), " values, expected ", nk);
  // The same rules the reader applies: a NaN from an overflowing forward pass must not
  // become a file that every later run then refuses (or worse, an older build accepts).
  const std::string bad = first_invalid_stats_value(stats_tensor_values(s, i.rope_freqs, i.weights_fingerprint));
  if (!bad.empty())
    fail(path, ": refusing to write the statistics: ", bad,
         " (the model's activations are not finite on this input; check the model file)");

  StatsPayload out;
  auto set_meta = [&](const char* key, const std::string& v) { out.metadata.emplace_back(key, v); };
  set_meta("format", kStatsFormatName);
  set_meta("format_version", std::to_string(kStatsFormatVersion));
  if (converted) set_meta("source_format", i.source_format);
  // In a converted file, what the source format did not know stays absent.
  auto set_known = [&](const char* key, bool known, const std::string& v) {
    if (!converted || known) set_meta(key, v);
  };
  set_known("architecture", !i.architecture.empty(), i.architecture);
  set_meta("model_name", i.model_name);
  set_meta("n_layers", std::to_string(s.n_layers));
  set_meta("n_heads", std::to_string(s.n_heads));
  set_known("n_kv_heads", s.n_kv_heads > 0, std::to_string(s.n_kv_heads));
  set_meta("head_dim", std::to_string(s.head_dim));
  set_known("rope_theta", i.rope_theta > 0, exact_number_text(i.rope_theta));
  set_known("rope_scaling", !i.rope_scaling.empty(), i.rope_scaling);
  set_known("rope_attn_factor", i.rope_attn_factor > 0, exact_number_text(i.rope_attn_factor));
  set_known("token_count", i.token_count > 0, std::to_string(i.token_count));
  set_known("input_hash", !i.input_hash.empty(), i.input_hash);
  set_meta("pairing", "half");
  if (s.pass_dims() > 0) set_meta("rotary_dim", std::to_string(s.rotary_dims()));
  if (!i.scored_layers.empty()) set_meta("scored_layers", join_layers(i.scored_layers));
  auto add = [&](const char* name, const std::vector<float>& v, const std::vector<int64_t>& shape) {
    out.tensors.push_back({name, shape, v});
  };
  add("q_mean_real", s.q_mean_real, qs);
  add("q_mean_imag", s.q_mean_imag, qs);
  add("q_abs_mean", s.q_abs_mean, qs);
  add("q_mrl", mean_resultant_length(s.q_mean_real, s.q_mean_imag, s.q_abs_mean), qs);
  if (keys) {
    add("k_mean_real", s.k_mean_real, ks);
    add("k_mean_imag", s.k_mean_imag, ks);
    add("k_abs_mean", s.k_abs_mean, ks);
    add("k_mrl", mean_resultant_length(s.k_mean_real, s.k_mean_imag, s.k_abs_mean), ks);
  }
  if (!i.rope_freqs.empty()) add("rope_freqs", i.rope_freqs, {half});
  if (s.pass_dims() > 0) {
    add("q_pass_mean", s.q_pass_mean, {s.n_layers, s.n_heads, s.pass_dims()});
    add("q_pass_abs_mean", s.q_pass_abs_mean, {s.n_layers, s.n_heads});
  }
  if (!i.weights_fingerprint.empty()) add("weights_fingerprint", i.weights_fingerprint, {kWeightsFingerprintSize});
  return out;
}

void write_stats_file(const std::string& path, const HeadStats& s, const StatsInfo& i) {
  const StatsPayload p = stats_payload(s, i, path);
  SafetensorsWriter w;
  for (const auto& [k, v] : p.metadata) w.set_metadata(k, v);
  for (const StatsPayload::Tensor& t : p.tensors)
    w.add(t.name, DType::F32, t.shape, t.values.data(), t.values.size() * sizeof(float));
  write_file_atomically(path, [&](const std::string& tmp) { w.write(tmp); });
}

LoadedStats read_stats_any(const std::string& path) {
  const StatsFileSniff sniff = sniff_stats_file(path);
  refuse_non_stats_file(path, sniff);
  LoadedStats out;
  switch (sniff.kind) {
    case StatsFileKind::TorchZip: {
      PtStats pt = read_pt_stats(path);  // values checked there, by the same rules
      out.official_pt = true;
      out.format = StatsFormat::OfficialPt;
      out.info.n_layers = pt.stats.n_layers;
      out.info.n_heads = pt.stats.n_heads;
      out.info.head_dim = pt.stats.head_dim;
      out.info.rope_attn_factor = 0;  // not recorded
      out.stats = std::make_shared<HeadStats>(std::move(pt.stats));
      break;
    }
    case StatsFileKind::Tria: out = read_tria_stats(path); break;
    case StatsFileKind::NumpyZip: out = read_npz_stats(path); break;
    default: return read_safetensors_stats(path);
  }
  out.info.source_format = stats_format_name(out.format);
  return out;
}

}  // namespace triattn
