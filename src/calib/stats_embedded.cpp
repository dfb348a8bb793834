#include "calib/stats_embedded.h"

#include <filesystem>

#include "calib/stats_container.h"
#include "calib/stats_file_kind.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "formats/stats_names.h"
#include "model/model.h"

namespace triattn {

namespace fs = std::filesystem;

namespace {

bool has_stats_prefix(const std::string& name) { return name.rfind(kGgufStatsPrefix, 0) == 0; }

std::string unprefixed(const std::string& name) { return name.substr(std::string(kGgufStatsPrefix).size()); }

}  // namespace

bool gguf_has_stats(const GgufFile& gguf) {
  for (const auto& [key, v] : gguf.metadata())
    if (has_stats_prefix(key)) return true;
  for (const GgufTensorInfo& t : gguf.tensors())
    if (has_stats_prefix(t.name)) return true;
  return false;
}

LoadedStats read_gguf_stats(const GgufFile& gguf) {
  StatsContainer c;
  c.path = gguf.path();
  for (const auto& [key, v] : gguf.metadata()) {
    if (!has_stats_prefix(key)) continue;
    // Strings, exactly the stats file's metadata text (numbers printed to read back exact).
    if (v.type != GgufType::STRING)
      fail(gguf.path(), ": metadata key '", key, "' is not a string; TriAttention statistics keys hold the stats "
           "file's metadata text (docs/design.md)");
    c.metadata.emplace(unprefixed(key), v.as_string());
  }
  if (!c.metadata.count("format"))
    fail(gguf.path(), ": holds triattention.* entries but no '", kGgufStatsPrefix, "format' key (the statistics are "
         "damaged; embed them again with `triattn calibrate --into ... --replace`)");
  for (const GgufTensorInfo& t : gguf.tensors())
    if (has_stats_prefix(t.name)) c.tensors.push_back({unprefixed(t.name), t.type, t.shape, t.data, t.nbytes});
  return read_stats_container(c);
}

EmbeddedStats find_embedded_stats(const std::string& model_path) {
  std::error_code ec;
  if (fs::is_directory(model_path, ec)) {
    const fs::path p = fs::path(model_path) / kHfStatsFileName;
    if (fs::exists(p, ec)) return {EmbeddedStats::Kind::HfFile, p.string()};
    return {};
  }
  if (sniff_stats_file(model_path).kind != StatsFileKind::Gguf) return {};
  if (gguf_has_stats(*GgufFile::open(model_path))) return {EmbeddedStats::Kind::Gguf, model_path};
  return {};
}

LoadedStats read_embedded_stats(const EmbeddedStats& where) {
  switch (where.kind) {
    case EmbeddedStats::Kind::Gguf: return read_gguf_stats(*GgufFile::open(where.path));
    case EmbeddedStats::Kind::HfFile: return read_stats_any(where.path);
    case EmbeddedStats::Kind::None: break;
  }
  fail("no TriAttention statistics in the model");
}

std::shared_ptr<const HeadStats> load_embedded_stats(const Model& model, std::vector<std::string>* warnings) {
  const EmbeddedStats where = find_embedded_stats(model.path());
  if (!where) return nullptr;
  if (where.kind == EmbeddedStats::Kind::HfFile) return load_stats(where.path, model, warnings);
  const LoadedStats l = read_embedded_stats(where);
  check_stats_match(l, model.config(), where.path);
  check_stats_identity(l, model, where.path, warnings);
  return l.stats;
}

}  // namespace triattn
