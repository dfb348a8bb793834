#include "calib/pt_stats.h"

#include <charconv>
#include <cstring>
#include <string_view>
#include <utility>

#include "calib/head_grid.h"
#include "calib/pickle_reader.h"
#include "calib/stats_values.h"
#include "calib/zip_reader.h"
#include "core/error.h"
#include "core/half.h"

namespace triattn {

namespace {

// Gathers a 1-D strided tensor into floats, checking it lies inside its storage.
std::vector<float> tensor_values(const ZipArchive& zip, const std::string& prefix, const PyTensorRef& t,
                                 const std::string& name) {
  const std::string& path = zip.path();
  if (t.size.size() != 1) fail(path, ": tensor ", name, " has ", t.size.size(), " dimensions, expected 1");
  const std::string entry = prefix + "data/" + t.storage_key;
  const auto bytes = zip.read(entry);
  const size_t esize = row_bytes(t.type, 1);
  // Divide rather than multiply: a hostile element count must not wrap around to the real size.
  if (t.storage_numel < 0 || bytes.size() % esize != 0 || static_cast<uint64_t>(t.storage_numel) != bytes.size() / esize)
    fail(path, ": storage '", entry, "' holds ", bytes.size(), " bytes, expected ", t.storage_numel, " elements of ",
         dtype_name(t.type));
  const int64_t n = t.size[0], stride = t.stride[0], numel = t.storage_numel;
  // Last element offset + (n-1)*stride < numel, without overflow: a stats vector never repeats
  // an element, so n <= numel, and then (n-1)*stride is bounded by the division.
  if (n < 0 || t.offset < 0 || stride < 0 || n > numel ||
      (n > 0 && (t.offset >= numel || (n > 1 && (stride == 0 || (n - 1) > (numel - 1 - t.offset) / stride)))))
    fail(path, ": tensor ", name, " reaches outside its storage");
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = bytes.data() + static_cast<size_t>(t.offset + i * stride) * esize;
    if (t.type == DType::F32) {
      std::memcpy(&out[i], p, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      out[i] = t.type == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
  }
  return out;
}

// "layerLL_headHH" -> (LL, HH). Digits only, and bounded: the grid [0, LL] x [0, HH] must
// be complete, so a huge number could only be an error.
std::pair<int, int> parse_head_key(const PyValue& k, const std::string& path) {
  constexpr int kMaxIndex = 1 << 16;
  auto bad = [&]() -> std::pair<int, int> {
    fail(path, ": unexpected stats key '", k.kind == PyValue::Kind::Str ? k.s : k.kind_name(),
         "' (expected layerLL_headHH, indices below ", kMaxIndex, ")");
  };
  if (k.kind != PyValue::Kind::Str || !k.s.starts_with("layer")) return bad();
  const char* p = k.s.data() + 5;
  const char* end = k.s.data() + k.s.size();
  int l = -1, h = -1;
  auto r = std::from_chars(p, end, l);
  if (r.ec != std::errc() || r.ptr == p || l < 0 || l >= kMaxIndex) return bad();
  const std::string_view rest(r.ptr, static_cast<size_t>(end - r.ptr));
  if (!rest.starts_with("_head")) return bad();
  p = r.ptr + 5;
  r = std::from_chars(p, end, h);
  if (r.ec != std::errc() || r.ptr == p || r.ptr != end || h < 0 || h >= kMaxIndex) return bad();
  return {l, h};
}

}  // namespace

PtStats read_pt_stats(const std::string& path) {
  ZipArchive zip(path);
  // torch names every entry "<archive>/..."; find the pickle to learn the prefix.
  std::string pkl;
  for (const auto& n : zip.names())
    if (n == "data.pkl" || (n.size() > 9 && n.ends_with("/data.pkl"))) {
      if (!pkl.empty()) fail(path, ": more than one data.pkl in the archive");
      pkl = n;
    }
  if (pkl.empty())
    fail(path, ": not a triattn stats file (a zip archive without data.pkl, so not a torch.save file; stats files come ",
         "from `triattn calibrate`, or the official TriAttention .pt)");
  const std::string prefix = pkl.substr(0, pkl.size() - 8);
  if (zip.contains(prefix + "byteorder")) {
    const auto bo = zip.read(prefix + "byteorder");
    if (std::string(bo.begin(), bo.end()) != "little") fail(path, ": big-endian torch files are not supported");
  }
  const PyRef root = unpickle(zip.read(pkl), path + ": " + pkl);
  if (root->kind != PyValue::Kind::Dict) fail(path, ": top-level object is a ", root->kind_name(), ", expected a dict");
  const PyValue* stats = root->get("stats");
  if (!stats || stats->kind != PyValue::Kind::Dict)
    fail(path, ": no \"stats\" dict: a torch.save file, but not TriAttention statistics (they come from the official ",
         "calibration script, or use `triattn calibrate`)");

  PtStats out;
  int64_t head_dim_meta = 0;
  if (const PyValue* meta = root->get("metadata"); meta && meta->kind == PyValue::Kind::Dict) {
    if (const PyValue* hd = meta->get("head_dim"); hd && hd->kind == PyValue::Kind::Int) head_dim_meta = hd->i;
    if (const PyValue* rs = meta->get("rope_style"); rs && rs->kind == PyValue::Kind::Str) out.rope_style = rs->s;
  }
  if (!out.rope_style.empty() && out.rope_style != "half")
    fail(path, ": rope_style '", out.rope_style, "' is not supported (only \"half\" pairing)");

  // Collect the heads by (layer, head); the grid checks they are complete.
  HeadGrid grid(path, ".pt file");
  for (const auto& [k, v] : stats->entries) {
    const auto [l, h] = parse_head_key(*k, path);
    const std::string key = "stats['" + k->s + "']";
    if (v->kind != PyValue::Kind::Dict) fail(path, ": ", key, " is a ", v->kind_name(), ", expected a dict");
    HeadQStats hd;
    const std::pair<const char*, std::vector<float>*> fields[] = {
        {"q_mean_real", &hd.re}, {"q_mean_imag", &hd.im}, {"q_abs_mean", &hd.abs}};
    for (const auto& [field, dst] : fields) {
      const PyValue* t = v->get(field);
      if (!t || t->kind != PyValue::Kind::Tensor) fail(path, ": ", key, " has no tensor '", field, "'");
      *dst = tensor_values(zip, prefix, t->tensor, k->s + "." + field);
    }
    grid.add(l, h, std::move(hd), key);
  }
  out.stats = grid.assemble(0, 0, 0);
  if (head_dim_meta != 0 && head_dim_meta != out.stats.head_dim)
    fail(path, ": metadata head_dim ", head_dim_meta, " but the tensors hold ", out.stats.head_dim / 2,
         " bands (head_dim ", out.stats.head_dim, ")");
  return out;
}

}  // namespace triattn
