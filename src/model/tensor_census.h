#pragma once
// What a loader learns from the tensor names of a checkpoint, apart from the tensors it asks
// for: which layer indices are present ("model.layers.N." or "blk.N." names), to be checked
// against the layer count the metadata promises before anything is sized by it, and which
// tensors the loader never used, reported as a warning (an unknown tensor is a sign of an
// architecture variant that would load but compute the wrong thing).
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace triattn {

class TensorCensus {
 public:
  // `layer_prefix` is what precedes the layer index: "model.layers." or "blk.".
  TensorCensus(const std::vector<std::string>& names, std::string layer_prefix);

  // Throws unless the layer indices present are exactly 0..n_layers-1:
  // "<count_source> says 2 layers but <file> holds tensors for 4 (model.layers.0-3)".
  void check_layer_count(int64_t n_layers, const std::string& count_source, const std::string& file) const;

  void mark_used(const std::string& name);
  // "<file>: 3 tensors not used: a, b, c" (the first few names, then how many more);
  // nullopt when every tensor was used.
  std::optional<std::string> unused_report(const std::string& file) const;

 private:
  std::string describe_layers() const;  // "model.layers.0-3" / "blk.0-1, 3" / "no blk.N tensors"

  std::string prefix_;
  std::set<std::string> unused_;
  std::set<int64_t> layers_;
};

}  // namespace triattn
