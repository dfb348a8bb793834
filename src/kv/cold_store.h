#pragma once
// The cold tier of a KV cache (docs/design.md, "Cold tier and recall"): the rows a policy
// evicted, kept per stream in a compact type instead of being dropped, so that recall can
// bring back the ones later queries want. Attention never reads them: only a recall event
// scores them, so they cost memory, not bandwidth per token.
//
// Rows are Q8_0 (the hot rows' own bytes when the hot cache is Q8_0 already; F16 when the
// head dimension is not a multiple of 32) and sit in arrival order; a row's slot moves only
// when a row before it leaves (take, drop). Each row carries its position and its usefulness:
// the recall score it got at the last recall event that measured it (+inf until one did),
// what the cap drops by.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/dtype.h"

namespace triattn {

class ColdStore {
 public:
  ColdStore() = default;
  // stream_dims[s]: elements of stream s's rows (0: a stream that never goes cold: a KV head its
  // layer lacks, a sliding or state layer). cap_bytes: the most bytes all streams hold together.
  ColdStore(std::vector<int> stream_dims, size_t cap_bytes);

  bool enabled() const { return !streams_.empty(); }
  DType type(int stream) const { return streams_[static_cast<size_t>(stream)].type; }
  int64_t size(int stream) const { return static_cast<int64_t>(streams_[static_cast<size_t>(stream)].pos.size()); }
  const int32_t* positions(int stream) const { return streams_[static_cast<size_t>(stream)].pos.data(); }
  // Rows of type(stream), row_bytes(stream) apart.
  const void* keys(int stream) const { return streams_[static_cast<size_t>(stream)].k.data(); }
  const void* values(int stream) const { return streams_[static_cast<size_t>(stream)].v.data(); }
  size_t row_bytes(int stream) const { return streams_[static_cast<size_t>(stream)].row; }
  std::span<float> usefulness(int stream) { return streams_[static_cast<size_t>(stream)].useful; }

  // Takes one evicted row of `hot_type` (as the hot cache stores it) at `pos`.
  void add(int stream, int32_t pos, DType hot_type, const void* k, const void* v);
  // Writes row i of the stream as `hot_type` into k and v (what recall puts back).
  void read(int stream, int64_t i, DType hot_type, void* k, void* v) const;
  // Removes the given rows (indices into the stream, any order, no repeats).
  void remove(int stream, std::vector<int32_t> rows);
  // Drops the least useful rows (lowest usefulness, then oldest position) until the store
  // fits its cap; each stream gets an equal share, so streams that hold the same positions
  // (a shared keep set) drop the same ones. Returns the rows dropped.
  int64_t enforce_cap();
  void clear();

  size_t bytes() const;  // rows, positions and usefulness, over every stream
  size_t cap_bytes() const { return cap_; }
  int64_t dropped() const { return dropped_; }

 private:
  struct Stream {
    DType type = DType::Q8_0;
    int dim = 0;
    size_t row = 0;  // bytes of one K (or V) row; 0: the stream never goes cold
    std::vector<uint8_t> k, v;
    std::vector<int32_t> pos;
    std::vector<float> useful;
  };
  size_t slot_bytes(const Stream& s) const { return 2 * s.row + sizeof(int32_t) + sizeof(float); }
  std::vector<Stream> streams_;
  size_t cap_ = 0;
  int64_t dropped_ = 0;
};

}  // namespace triattn
