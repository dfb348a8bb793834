#pragma once
// Statistics carried by the model itself (docs/design.md, "Statistics inside the model"): a
// GGUF with triattention.* tensors and keys, or triattention.safetensors in an HF directory.
// Used when no --stats is given, with the same checks as a separate stats file.
#include <memory>
#include <string>
#include <vector>

#include "calib/stats_file.h"

namespace triattn {

class GgufFile;

struct EmbeddedStats {
  enum class Kind { None, Gguf, HfFile } kind = Kind::None;
  std::string path;  // the GGUF, or DIR/triattention.safetensors
  explicit operator bool() const { return kind != Kind::None; }
};

// Where the model at `model_path` (as given to Model::load) keeps statistics; Kind::None when
// it keeps none, or is not a GGUF or a directory. Reads only the GGUF header.
EmbeddedStats find_embedded_stats(const std::string& model_path);
// Whether any triattention.* key or tensor is in the file.
bool gguf_has_stats(const GgufFile& gguf);
// The statistics of a GGUF, checked as a stats file's are (Error naming the file and field).
LoadedStats read_gguf_stats(const GgufFile& gguf);
LoadedStats read_embedded_stats(const EmbeddedStats& where);
// load_stats for the model's own statistics: null when it carries none, else validated
// against the model (shape, RoPE, weights fingerprint) like a --stats file.
std::shared_ptr<const HeadStats> load_embedded_stats(const Model& model, std::vector<std::string>* warnings);

}  // namespace triattn
