#pragma once
// The stats file's content apart from its container (stats_file.h): the string metadata and
// the named f32 tensors. Our safetensors stats file and a model GGUF that carries the
// statistics (formats/stats_names.h) hold the same fields, so one reader validates both
// and one payload writes both, and statistics round-trip between them bit for bit.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calib/stats_file.h"
#include "core/dtype.h"

namespace triattn {

struct StatsTensorRef {
  std::string name;  // without any container prefix ("q_mean_real")
  DType type = DType::F32;
  std::vector<int64_t> shape;  // outermost first
  const void* data = nullptr;  // owned by the container, alive while it is read
  size_t nbytes = 0;
};

// What the reader sees. `path` names the container in messages.
struct StatsContainer {
  std::string path;
  std::map<std::string, std::string> metadata;
  std::vector<StatsTensorRef> tensors;
  const StatsTensorRef* find(const std::string& name) const;
};

// Every field checked as for a stats file (format, version, values, shapes).
LoadedStats read_stats_container(const StatsContainer& c);

// What a writer stores, validated first (Error naming `path`): metadata in order, then the
// tensors, each f32 with its shape.
struct StatsPayload {
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> values;
  };
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<Tensor> tensors;
};
StatsPayload stats_payload(const HeadStats& stats, const StatsInfo& info, const std::string& path);

}  // namespace triattn
