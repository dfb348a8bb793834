#include "calib/npz_stats.h"

#include <charconv>
#include <map>
#include <memory>

#include "calib/head_grid.h"
#include "calib/npy_array.h"
#include "calib/zip_reader.h"
#include "calib/zip_writer.h"
#include "core/error.h"

namespace triattn {

namespace {

constexpr const char* kFormat = "MLX .npz statistics file";
constexpr const char* kFields[] = {"q_mean_real", "q_mean_imag", "q_abs_mean"};

// "l_<L>_h_<H>_<field>" -> L, H, field index; false when the key is not of that form.
bool parse_key(const std::string& k, int& l, int& h, int& field) {
  constexpr int kMaxIndex = 1 << 16;
  if (!k.starts_with("l_")) return false;
  const char* p = k.data() + 2;
  const char* end = k.data() + k.size();
  auto r = std::from_chars(p, end, l);
  if (r.ec != std::errc() || r.ptr == p || l < 0 || l >= kMaxIndex || std::string_view(r.ptr, end).substr(0, 3) != "_h_")
    return false;
  p = r.ptr + 3;
  r = std::from_chars(p, end, h);
  if (r.ec != std::errc() || r.ptr == p || h < 0 || h >= kMaxIndex || r.ptr == end || *r.ptr != '_') return false;
  const std::string_view rest(r.ptr + 1, end);
  for (field = 0; field < 3; ++field)
    if (rest == kFields[field]) return true;
  return false;
}

}  // namespace

LoadedStats read_npz_stats(const std::string& path) {
  ZipArchive zip(path);
  const std::vector<std::string> names = zip.names();
  auto where = [&](const std::string& n) { return path + ": entry '" + n + "'"; };
  if (zip.contains("calibrated.npy")) {
    const NpyArray a = parse_npy(zip.read("calibrated.npy"), where("calibrated.npy"));
    if (a.descr != "|b1" || a.numel() != 1)
      fail(where("calibrated.npy"), ": expected one boolean, found type '", a.descr, "' of ", a.numel(), " elements");
    if (a.data[0] == 0)
      fail(path, ": an MLX placeholder without statistics ('calibrated' is False: calibrate_mlx.py writes this before ",
           "any statistics exist); calibrate with `triattn calibrate` instead");
  }
  struct Partial {
    std::vector<float> v[3];
    bool have[3] = {false, false, false};
  };
  std::map<std::pair<int, int>, Partial> heads;
  for (const std::string& n : names) {
    if (n == "calibrated.npy") continue;
    if (!n.ends_with(".npy")) fail(where(n), " is not a .npy array: not an .npz written by np.savez");
    int l = 0, h = 0, field = 0;
    if (!parse_key(n.substr(0, n.size() - 4), l, h, field))
      fail(where(n), " is not part of the MLX statistics layout (l_<layer>_h_<head>_q_mean_real, _q_mean_imag, ",
           "_q_abs_mean)");
    const NpyArray a = parse_npy(zip.read(n), where(n));
    if (a.shape.size() != 1) fail(where(n), " has ", a.shape.size(), " dimensions, expected 1 (the bands)");
    Partial& p = heads[{l, h}];
    p.v[field] = npy_floats(a, where(n));
    p.have[field] = true;
  }
  HeadGrid grid(path, kFormat);
  for (auto& [lh, p] : heads) {
    const std::string key = "l_" + std::to_string(lh.first) + "_h_" + std::to_string(lh.second);
    for (int f = 0; f < 3; ++f)
      if (!p.have[f]) fail(path, ": ", kFormat, " has no '", key, "_", kFields[f], "' beside the head's other arrays");
    grid.add(lh.first, lh.second, {std::move(p.v[0]), std::move(p.v[1]), std::move(p.v[2])}, key);
  }
  LoadedStats out;
  out.format = StatsFormat::MlxNpz;
  out.official_pt = true;  // the official implementation's: no KV heads, no identity
  auto s = std::make_shared<HeadStats>(grid.assemble(0, 0, 0));
  out.info.n_layers = s->n_layers, out.info.n_heads = s->n_heads, out.info.head_dim = s->head_dim;
  out.info.rope_attn_factor = 0;
  out.stats = std::move(s);
  return out;
}

std::vector<uint8_t> npz_stats_bytes(const HeadStats& s) {
  ZipWriter zip;
  const size_t fc = static_cast<size_t>(s.bands());
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = 0; h < s.n_heads; ++h) {
      const size_t at = (static_cast<size_t>(l) * s.n_heads + h) * fc;
      const std::string key = "l_" + std::to_string(l) + "_h_" + std::to_string(h) + "_";
      const std::vector<float>* v[] = {&s.q_mean_real, &s.q_mean_imag, &s.q_abs_mean};
      for (int f = 0; f < 3; ++f)
        zip.add(key + kFields[f] + ".npy", npy_f32_bytes(std::span(v[f]->data() + at, fc)));
    }
  return zip.finish();
}

}  // namespace triattn
