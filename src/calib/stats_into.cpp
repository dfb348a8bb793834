#include "calib/stats_into.h"

#include <cstring>
#include <filesystem>

#include "calib/atomic_write.h"
#include "calib/stats_container.h"
#include "calib/stats_embedded.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "formats/stats_names.h"

namespace triattn {

namespace fs = std::filesystem;

namespace {

bool same_path(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

bool is_stats_name(const std::string& name) { return name.rfind(kGgufStatsPrefix, 0) == 0; }

const char* kReplaceHint = "; give --replace to overwrite them";

}  // namespace

void embed_stats_in_gguf(const std::string& model_gguf, const std::string& out, const HeadStats& stats,
                         const StatsInfo& info, bool replace) {
  if (same_path(model_gguf, out))
    fail("-o ", out, " is the --into model itself; write the model with statistics to a new file (the original "
         "stays as it was)");
  const StatsPayload payload = stats_payload(stats, info, out);  // validated before anything is written
  const auto in = GgufFile::open(model_gguf);
  if (gguf_has_stats(*in) && !replace)
    fail(model_gguf, ": already holds TriAttention statistics (", kGgufStatsPrefix, "* keys or tensors)", kReplaceHint);

  GgufWriter w;
  for (const auto& [key, v] : in->metadata())
    if (!is_stats_name(key)) w.set(key, v);
  for (const auto& [key, v] : payload.metadata) w.set_string(kGgufStatsPrefix + key, v);
  // The model's tensors row by row from the mapping (no copy of a large model in memory);
  // the writer places them at the offsets the same alignment gives, in the same order.
  for (const GgufTensorInfo& t : in->tensors()) {
    if (is_stats_name(t.name)) continue;
    const auto* src = static_cast<const uint8_t*>(t.data);
    const size_t row = t.shape.empty() ? t.nbytes : row_bytes(t.type, t.shape.back());
    w.add_tensor_rows(t.name, t.type, t.shape, [src, row](int64_t r, uint8_t* dst) {
      std::memcpy(dst, src + static_cast<size_t>(r) * row, row);
    });
  }
  for (const StatsPayload::Tensor& t : payload.tensors)
    w.add_tensor(kGgufStatsPrefix + t.name, DType::F32, t.shape, t.values.data(), t.values.size() * sizeof(float));
  write_file_atomically(out, [&](const std::string& tmp) { w.write(tmp, in->alignment()); });
}

std::string write_stats_beside_hf(const std::string& model_dir, const HeadStats& stats, const StatsInfo& info,
                                  bool replace) {
  const std::string path = (fs::path(model_dir) / kHfStatsFileName).string();
  std::error_code ec;
  if (fs::exists(path, ec) && !replace)
    fail(model_dir, ": already holds TriAttention statistics (", kHfStatsFileName, ")", kReplaceHint);
  write_stats_file(path, stats, info);
  return path;
}

}  // namespace triattn
