#include "calib/tria_stats.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>
#include <memory>

#include "calib/field_reader.h"
#include "calib/head_grid.h"
#include "calib/stats_values.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace triattn {

namespace {

constexpr const char* kV1 = "TRIA v1 (.triattention) file";
constexpr const char* kV2 = "TRIA v2 (triattention-ggml) file";
constexpr uint64_t kMaxCount = 1u << 20;  // layers, heads, bands: far beyond any model, so sizes below cannot overflow
constexpr size_t kV2Header = 64;

uint32_t u32_at(const uint8_t* p, size_t at) {
  uint32_t v;
  std::memcpy(&v, p + at, 4);
  return v;
}

// The byte counts each layout implies from its header, or 0 when its header does not add up.
uint64_t v1_expected_size(const uint8_t* p, size_t size) {
  if (size < 48) return 0;
  const uint64_t head_dim = u32_at(p, 8), n = u32_at(p, 36), fc = u32_at(p, 40), name = u32_at(p, 44);
  if (fc == 0 || fc > kMaxCount || head_dim != 2 * fc || n > kMaxCount * 16) return 0;
  return 48 + name + n * (8 + 16 * fc);
}
uint64_t v2_expected_size(const uint8_t* p, size_t size) {
  if (size < kV2Header) return 0;
  const uint64_t version = u32_at(p, 4), L = u32_at(p, 8), H = u32_at(p, 12), head_dim = u32_at(p, 20), fc = u32_at(p, 24);
  if (fc == 0 || fc > kMaxCount || head_dim != 2 * fc || L > kMaxCount || H > kMaxCount) return 0;
  if (L * H > kMaxCount * 16) return 0;  // so that the product below stays far from overflowing
  return kV2Header + (version >= 2 ? 4 * L : 0) + L * H * 16 * fc;
}

void check_positive(const std::string& path, const char* format, const char* field, double v) {
  if (!std::isfinite(v) || v <= 0) fail(path, ": ", format, " field '", field, "' is ", v, " (must be finite and positive)");
}

void check_count(const std::string& path, const char* format, const char* field, uint32_t v) {
  if (v == 0 || v > kMaxCount) fail(path, ": ", format, " field '", field, "' is ", v, " (want 1..", kMaxCount, ")");
}

// One head's four arrays; the fourth (r_f / mrl) is derived: only its values are checked.
HeadQStats read_head(FieldReader& c, size_t fc, const std::string& key, const std::string& path, const char* format,
                     const char* derived) {
  HeadQStats h;
  h.re = c.floats(fc, key + " q_mean_real");
  h.im = c.floats(fc, key + " q_mean_imag");
  h.abs = c.floats(fc, key + " q_abs_mean");
  const std::vector<float> d = c.floats(fc, key + " " + derived);
  for (size_t f = 0; f < fc; ++f)
    if (!std::isfinite(d[f]) || d[f] < 0)
      fail(path, ": ", format, " ", key, " ", derived, " holds ", d[f], " at band ", f, " (must be finite, not negative)");
  if (std::all_of(h.abs.begin(), h.abs.end(), [](float v) { return v == 0; }))
    fail(path, ": ", format, " ", key, " holds only zeros (its writer fills the heads it captured nothing for with "
         "zeros; recalibrate so that every head has statistics)");
  return h;
}

void check_heads(const std::string& path, const char* format, uint32_t heads, uint32_t kv) {
  if (kv > heads || heads % kv != 0)
    fail(path, ": ", format, " says ", heads, " attention heads over ", kv, " KV heads (must divide them)");
}

LoadedStats read_v1(const MappedFile& m) {
  const std::string& path = m.path();
  FieldReader c(m.data(), m.size(), path, kV1);
  c.take(8, "magic and version");
  const uint32_t head_dim = c.u32("head_dim"), L = c.u32("num_layers"), H = c.u32("num_attn_heads"),
                 KV = c.u32("num_kv_heads");
  const double theta = c.f64("rope_theta");
  const uint32_t style = c.u32("rope_style"), n = c.u32("n_sampled"), fc = c.u32("freq_count"),
                 name_len = c.u32("name_len");
  for (const auto& [field, v] : std::initializer_list<std::pair<const char*, uint32_t>>{{"head_dim", head_dim}, {"num_layers", L}, {"num_attn_heads", H},
                          {"num_kv_heads", KV}, {"freq_count", fc}})
    check_count(path, kV1, field, v);
  if (head_dim != 2 * fc) fail(path, ": ", kV1, " freq_count ", fc, " is not head_dim / 2 (head_dim ", head_dim, ")");
  check_heads(path, kV1, H, KV);
  check_positive(path, kV1, "rope_theta", theta);
  if (style == 1)
    fail(path, ": ", kV1, " has rope_style 1 (interleaved bands, x[2f] with x[2f+1]); triattn's statistics pair "
         "x[f] with x[f + d/2] (rope_style 0, \"half\") and interleaved bands cannot be converted to them");
  if (style != 0) fail(path, ": ", kV1, " field 'rope_style' is ", style, " (0 = half and 1 = interleaved are defined)");
  const uint8_t* name = c.take(name_len, "name");
  HeadGrid grid(path, kV1);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string entry = "entry " + std::to_string(i);
    const uint32_t l = c.u32(entry + " layer"), h = c.u32(entry + " head");
    if (l >= L || h >= H)
      fail(path, ": ", kV1, " ", entry, " names layer ", l, " head ", h, ", outside its ", L, " layers of ", H, " heads");
    const std::string key = "layer " + std::to_string(l) + " head " + std::to_string(h);
    grid.add(static_cast<int>(l), static_cast<int>(h), read_head(c, fc, key, path, kV1, "r_f"), key);
  }
  if (c.left() != 0) fail(path, ": ", kV1, " has ", c.left(), " bytes after its ", n, " head entries");
  LoadedStats out;
  out.format = StatsFormat::TriaV1;
  out.format_version = 1;
  auto s = std::make_shared<HeadStats>(grid.assemble(static_cast<int>(L), static_cast<int>(H), static_cast<int>(KV)));
  StatsInfo& i = out.info;
  i.model_name.assign(reinterpret_cast<const char*>(name), name_len);
  i.n_layers = s->n_layers, i.n_heads = s->n_heads, i.n_kv_heads = s->n_kv_heads, i.head_dim = s->head_dim;
  i.rope_theta = theta;
  i.rope_attn_factor = 0;  // not recorded
  out.stats = std::move(s);
  return out;
}

LoadedStats read_v2(const MappedFile& m, uint32_t version) {
  const std::string& path = m.path();
  FieldReader c(m.data(), m.size(), path, kV2);
  c.take(8, "magic and version");
  const uint32_t L = c.u32("num_layers"), H = c.u32("num_heads"), KV = c.u32("num_kv_heads"),
                 head_dim = c.u32("head_dim"), fc = c.u32("freq_count");
  const float theta = c.f32("rope_theta"), attn_scale = c.f32("attn_scale");
  for (const auto& [field, v] : std::initializer_list<std::pair<const char*, uint32_t>>{{"num_layers", L}, {"num_heads", H}, {"num_kv_heads", KV}, {"head_dim", head_dim},
                          {"freq_count", fc}})
    check_count(path, kV2, field, v);
  if (head_dim != 2 * fc) fail(path, ": ", kV2, " freq_count ", fc, " is not head_dim / 2 (head_dim ", head_dim, ")");
  check_heads(path, kV2, H, KV);
  check_positive(path, kV2, "rope_theta", theta);
  check_positive(path, kV2, "attn_scale", attn_scale);
  const uint8_t* reserved = c.take(kV2Header - c.offset(), "reserved");
  for (size_t b = 0; b < kV2Header - 36; ++b)
    if (reserved[b] != 0)
      fail(path, ": ", kV2, " has a nonzero byte in its 'reserved' header field (byte ", 36 + b,
           "): written by a newer version whose meaning this build does not know");
  LoadedStats out;
  out.format = StatsFormat::TriaV2;
  out.format_version = static_cast<int>(version);
  if (version >= 2) {
    const std::vector<float> scales = c.floats(L, "layer_budget_scales");
    for (uint32_t l = 0; l < L; ++l) check_positive(path, kV2, ("layer_budget_scales[" + std::to_string(l) + "]").c_str(), scales[l]);
    if (std::any_of(scales.begin(), scales.end(), [](float v) { return v != 1.0f; }))
      out.notes.push_back(path + ": its per-layer budget scales (layer_budget_scales) are not applied: triattn keeps "
                          "the same --kv-budget in every layer");
  }
  HeadGrid grid(path, kV2);
  for (uint32_t l = 0; l < L; ++l)
    for (uint32_t h = 0; h < H; ++h) {
      const std::string key = "layer " + std::to_string(l) + " head " + std::to_string(h);
      grid.add(static_cast<int>(l), static_cast<int>(h), read_head(c, fc, key, path, kV2, "mrl"), key);
    }
  if (c.left() != 0) fail(path, ": ", kV2, " has ", c.left(), " bytes after its ", L * H, " heads");
  auto s = std::make_shared<HeadStats>(grid.assemble(static_cast<int>(L), static_cast<int>(H), static_cast<int>(KV)));
  StatsInfo& i = out.info;
  i.n_layers = s->n_layers, i.n_heads = s->n_heads, i.n_kv_heads = s->n_kv_heads, i.head_dim = s->head_dim;
  i.rope_theta = theta;
  i.rope_attn_factor = attn_scale;
  out.stats = std::move(s);
  return out;
}

// What the foreign writers need that the statistics may not know.
void require_field(bool known, const std::string& path, const char* format, const char* field, const char* flag) {
  if (!known)
    fail(path, ": the ", format, " format records ", field, ", which the statistics being written do not know (they ",
         "come from a format without it); give it with ", flag);
}

void put_heads(ByteSink& out, const HeadStats& s, bool with_index) {
  const size_t fc = static_cast<size_t>(s.bands());
  const std::vector<float> r = mean_resultant_length(s.q_mean_real, s.q_mean_imag, s.q_abs_mean);
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = 0; h < s.n_heads; ++h) {
      if (with_index) {
        out.put<uint32_t>(static_cast<uint32_t>(l));
        out.put<uint32_t>(static_cast<uint32_t>(h));
      }
      const size_t at = (static_cast<size_t>(l) * s.n_heads + h) * fc;
      for (const std::vector<float>* v : {&s.q_mean_real, &s.q_mean_imag, &s.q_abs_mean, &r})
        out.put_floats(v->data() + at, fc);
    }
}

}  // namespace

LoadedStats read_tria_stats(const std::string& path) {
  MappedFile m(path);
  if (m.size() < 4 || u32_at(m.data(), 0) != kTriaMagic) fail(path, ": not a TRIA statistics file (no \"TRIA\" magic)");
  if (m.size() < 8) fail(path, ": truncated TRIA file: ", m.size(), " bytes, too few for its magic and version");
  const uint32_t version = u32_at(m.data(), 4);
  if (version == 2) return read_v2(m, version);
  if (version != 1)
    fail(path, ": TRIA version ", version, " is not supported (version 1 of the llama.cpp TurboQuant fork and versions 1 "
         "and 2 of triattention-ggml are)");
  const uint64_t v1 = v1_expected_size(m.data(), m.size()), v2 = v2_expected_size(m.data(), m.size());
  if (v1 == m.size()) return read_v1(m);
  if (v2 == m.size()) return read_v2(m, version);
  fail(path, ": a TRIA version 1 file of ", m.size(), " bytes, which fits neither version-1 layout (the TurboQuant fork's "
       ".triattention header implies ", v1 ? std::to_string(v1) + " bytes" : std::string("no consistent size"),
       ", triattention-ggml's ", v2 ? std::to_string(v2) + " bytes" : std::string("no consistent size"),
       "): the file is truncated or damaged");
}

std::vector<uint8_t> tria_v1_bytes(const HeadStats& s, const StatsInfo& info, const std::string& path) {
  require_field(info.n_kv_heads > 0 || s.n_kv_heads > 0, path, "tria-v1", "the KV head count", "--kv-heads");
  require_field(info.rope_theta > 0, path, "tria-v1", "RoPE theta", "--rope-theta");
  ByteSink out;
  const std::string name = info.model_name.substr(0, 255);  // as its writer truncates
  out.put<uint32_t>(kTriaMagic);
  out.put<uint32_t>(1);
  out.put<uint32_t>(static_cast<uint32_t>(s.head_dim));
  out.put<uint32_t>(static_cast<uint32_t>(s.n_layers));
  out.put<uint32_t>(static_cast<uint32_t>(s.n_heads));
  out.put<uint32_t>(static_cast<uint32_t>(s.n_kv_heads > 0 ? s.n_kv_heads : info.n_kv_heads));
  out.put<double>(info.rope_theta);
  out.put<uint32_t>(0);  // rope_style: half
  out.put<uint32_t>(static_cast<uint32_t>(s.n_layers * s.n_heads));
  out.put<uint32_t>(static_cast<uint32_t>(s.bands()));
  out.put<uint32_t>(static_cast<uint32_t>(name.size()));
  out.put_bytes(name);
  put_heads(out, s, true);
  return std::move(out.bytes);
}

std::vector<uint8_t> tria_v2_bytes(const HeadStats& s, const StatsInfo& info, const std::string& path) {
  require_field(info.n_kv_heads > 0 || s.n_kv_heads > 0, path, "tria-v2", "the KV head count", "--kv-heads");
  require_field(info.rope_theta > 0, path, "tria-v2", "RoPE theta", "--rope-theta");
  require_field(info.rope_attn_factor > 0, path, "tria-v2", "the RoPE attention scale", "--rope-attn-factor");
  ByteSink out;
  out.put<uint32_t>(kTriaMagic);
  out.put<uint32_t>(2);
  out.put<uint32_t>(static_cast<uint32_t>(s.n_layers));
  out.put<uint32_t>(static_cast<uint32_t>(s.n_heads));
  out.put<uint32_t>(static_cast<uint32_t>(s.n_kv_heads > 0 ? s.n_kv_heads : info.n_kv_heads));
  out.put<uint32_t>(static_cast<uint32_t>(s.head_dim));
  out.put<uint32_t>(static_cast<uint32_t>(s.bands()));
  out.put<float>(static_cast<float>(info.rope_theta));
  out.put<float>(static_cast<float>(info.rope_attn_factor));
  out.bytes.resize(kV2Header, 0);  // reserved
  for (int l = 0; l < s.n_layers; ++l) out.put<float>(1.0f);
  put_heads(out, s, false);
  return std::move(out.bytes);
}

}  // namespace triattn
