#pragma once
// KV cache of one sequence. Storage is one stream per (layer, KV head): keys and values as
// contiguous rows of head_dim (F32, F16 or Q8_0) plus each token's absolute position. A Q8_0
// row is head_dim/32 GGML Q8_0 blocks (an f16 scale and 32 int8s each: 136 bytes for
// head_dim 128 against F16's 256); rows are quantized once, on append, and every reader (the
// attention kernels, the policies' scorers) reads them as they are. Keys are
// stored post-RoPE at their absolute position. Streams of one layer may hold different
// tokens (per-head eviction), so every pruning mode is just a different KeepPlan.
// Only append() and apply() mutate; policies only read the cache and produce plans.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/large_buffer.h"
#include "core/thread_pool.h"
#include "kv/cold_store.h"
#include "ops/kv_rows.h"  // is_kv_type

namespace triattn {

struct KvCacheShape {
  // layer_window of a layer without a KV cache (a DeltaNet layer of a hybrid model).
  static constexpr int32_t kNoKv = -1;
  KvCacheShape() = default;
  KvCacheShape(int layers, int kv_heads, int dim, DType t = DType::F16, std::vector<int32_t> windows = {},
               std::vector<int64_t> state_floats = {})
      : n_layers(layers), n_kv_heads(kv_heads), head_dim(dim), type(t), layer_window(std::move(windows)),
        layer_state_floats(std::move(state_floats)) {}
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  DType type = DType::F16;  // F32, F16 or Q8_0 (head_dim a multiple of 32)
  // Per layer: 0 = full attention; w > 0 = a sliding-window layer, whose streams the forward
  // pass trims to its window (drop_before). KV policies compress the full layers only and
  // leave sliding streams as they are. kNoKv: the layer keeps no KV rows (its streams stay
  // empty). Empty: every layer is full.
  std::vector<int32_t> layer_window;
  // Per layer: the f32 floats of the fixed-size recurrent state the layer keeps per sequence
  // (a DeltaNet layer's convolution and delta-rule state; 0 for attention). Empty: none.
  std::vector<int64_t> layer_state_floats;
  // Per layer, where layers differ (Gemma 4's sliding and full layers): its KV heads and the
  // elements of its rows. n_kv_heads is then the largest (the streams of a layer with fewer
  // stay empty) and head_dim the full-attention layers' (what KV policies read). Empty: every
  // layer has n_kv_heads of head_dim.
  std::vector<int32_t> layer_kv_heads;
  std::vector<int32_t> layer_head_dim;
  int kv_heads(int layer) const {
    return layer_kv_heads.empty() ? n_kv_heads : layer_kv_heads[static_cast<size_t>(layer)];
  }
  int dim(int layer) const { return layer_head_dim.empty() ? head_dim : layer_head_dim[static_cast<size_t>(layer)]; }
};

// Which entries of each stream survive a pruning event. keep[stream] lists indices into the
// stream's current rows, strictly increasing; stream = layer * n_kv_heads + head.
struct KeepPlan {
  std::vector<std::vector<int32_t>> keep;
};

// A recall event's swap (kv/recall.h): per stream, rows of the cold store to bring back
// (indices into it) and as many hot rows to send cold in their place (indices into the
// stream); both strictly increasing.
struct RecallPlan {
  std::vector<std::vector<int32_t>> take, give;
};

// Throws a named error unless `type` can hold KV rows of head_dim elements.
void check_kv_type(DType type, int head_dim);

class KvCache {
 public:
  explicit KvCache(const KvCacheShape& shape, int64_t reserve_tokens = 0);

  const KvCacheShape& shape() const { return shape_; }
  int n_streams() const { return shape_.n_layers * shape_.n_kv_heads; }
  int stream_index(int layer, int head) const { return layer * shape_.n_kv_heads + head; }

  int64_t size(int layer, int head) const { return streams_[stream_index(layer, head)].n; }
  int64_t max_size() const;  // largest stream
  // A sliding-window layer (shape().layer_window): bounded by its window, never pruned.
  bool sliding(int layer) const {
    return !shape_.layer_window.empty() && shape_.layer_window[static_cast<size_t>(layer)] > 0;
  }
  bool has_kv(int layer) const {
    return shape_.layer_window.empty() || shape_.layer_window[static_cast<size_t>(layer)] != KvCacheShape::kNoKv;
  }
  // Sliding-window layers and layers without KV: policies neither score nor prune them.
  bool uncompressed(int layer) const { return sliding(layer) || !has_kv(layer); }
  int64_t max_full_size() const;  // largest stream of a full-attention layer (0 if none)
  const int32_t* positions(int layer, int head) const {
    return streams_[stream_index(layer, head)].pos.data();
  }
  // No row of the stream has a position above this (INT32_MIN while it holds none): the
  // largest appended, kept through pruning as a bound. Decode's queries are newer than every
  // cached key, and this tells attention so without a pass over the positions.
  int32_t max_position(int layer, int head) const { return streams_[stream_index(layer, head)].max_pos; }
  // Rows of shape().dim(layer) elements of shape().type, row_bytes(layer) apart
  // (ops::dequantize_row reads one into floats).
  const void* keys(int layer, int head) const { return krows(streams_[stream_index(layer, head)]); }
  const void* values(int layer, int head) const { return vrows(streams_[stream_index(layer, head)]); }
  size_t row_bytes() const { return row_bytes_; }  // of head_dim elements (the full layers')
  size_t row_bytes(int layer) const { return triattn::row_bytes(shape_.type, shape_.dim(layer)); }

  // Appends one token to every KV head of `layer`: k and v are f32 [kv_heads(layer) *
  // dim(layer)] (k already rotated). Every layer must receive the same tokens in the same order.
  void append(int layer, int32_t pos, const float* k, const float* v);
  // Pre-sizes every stream for n tokens (avoids reallocation during decode). On a cache that
  // holds no rows yet, every stream is laid out side by side in one buffer, so that all rows
  // sit in huge pages (see Stream).
  void reserve(int64_t n);
  // Compacts every stream to the plan's rows, in order. The only eviction path. Streams are
  // compacted on `pool`'s threads when given.
  // With the cold tier on (enable_cold), the rows a plan drops go to cold() instead.
  void apply(const KeepPlan& plan, ThreadPool* pool = nullptr);
  void clear();

  // The cold tier (kv/cold_store.h): from now on evicted rows of the compressed layers are kept
  // there, cap_bytes at most over all streams.
  void enable_cold(size_t cap_bytes);
  const ColdStore& cold() const { return cold_; }
  ColdStore& cold() { return cold_; }
  // Swaps rows between the tiers as the plan says: the taken rows rejoin their streams at their
  // positions (rows stay in position order), the given ones go cold. Stream sizes do not change.
  // Returns, per stream, the index each row had before (-1 for a row back from the cold store):
  // what a policy moves its per-row observations by (KvPolicy::on_recall).
  std::vector<std::vector<int32_t>> recall(const RecallPlan& plan, ThreadPool* pool = nullptr);
  int64_t recalled_rows() const { return recalled_rows_; }
  // Takes back the last n tokens fed (their rows are the newest of every stream; n_processed()
  // goes back by n), so that they can be fed again after a recall event. Error on a cache with
  // a recurrent state or sliding-window layers, which cannot take a token back, or when more
  // than rewindable() are asked for.
  void rewind_last(int64_t n);
  // How many of the last tokens fed every stream still holds as its newest rows, in order (what
  // rewind_last can take back): the pruning may have evicted some unless a window keeps them.
  int64_t rewindable() const;
  bool can_rewind() const { return state_.empty() && shape_.layer_window.end() == std::find_if(shape_.layer_window.begin(), shape_.layer_window.end(), [](int32_t w) { return w != 0; }); }
  size_t peak_cold_bytes() const { return peak_cold_bytes_; }
  // Drops the rows of every stream of `layer` whose position is below min_pos: how a
  // sliding-window layer (model/forward.cpp) keeps only its window. Not a prune event.
  void drop_before(int layer, int32_t min_pos);

  // Tokens fed through the model so far (p in docs/design.md, The algorithm); the engine
  // advances it.
  int64_t n_processed() const { return n_processed_; }
  void advance(int64_t n) { n_processed_ += n; }

  // The layer's recurrent state (KvCacheShape::layer_state_floats), zero at the start and after
  // clear(); the forward pass updates it in place. Null for a layer without one. It travels
  // with the cache: a copy (fork) or a kept cache carries it.
  float* state(int layer) { return layer_state(layer); }
  const float* state(int layer) const { return const_cast<KvCache*>(this)->layer_state(layer); }
  size_t state_bytes() const { return sizeof(float) * state_.size(); }

  size_t bytes_in_use() const;  // live K+V bytes over all streams (state_bytes() apart)
  int64_t capacity() const;     // rows allocated in the largest stream (reserved or grown)
  int64_t peak_tokens() const { return peak_tokens_; }
  size_t peak_bytes() const { return peak_bytes_; }
  int64_t prune_events() const { return prune_events_; }

 private:
  // K and V rows in huge pages: full attention reads every row of every stream per token,
  // and in 4 KiB pages each 4 KiB of rows is a TLB miss (a nested page walk in a VM); in huge
  // pages attend() reads faster (docs/benchmarks.md, "KV rows in huge pages").
  // reserve() on an empty cache lays every stream out side by side in one arena; a stream
  // that outgrows its share, or was never reserved, gets rows of its own (LargeAllocator).
  // Streams under 2 MiB (a bounded policy's) get huge pages only in the arena. So do the
  // last rows of larger ones: an allocation of its own ends in a partial huge page, left in
  // 4 KiB pages, and a decode that appends there faults a page every 16 F16 rows of 128 in
  // each of the 448 K and V buffers (docs/benchmarks.md, "KV rows in huge pages"). Rows are
  // found by offset, not
  // pointer, so the default copy of a cache is a valid cache.
  using Rows = std::vector<uint8_t, LargeAllocator<uint8_t>>;
  struct Stream {
    size_t row = 0;           // bytes of one row (0: a KV head its layer does not have)
    Rows own_k, own_v;        // the rows, unless they are in the arena
    int64_t in_arena = -1;    // else: K rows at arena_ + in_arena, V rows right after them
    std::vector<int32_t> pos;  // size() is the stream's capacity in rows
    int64_t n = 0;
    int32_t max_pos = std::numeric_limits<int32_t>::min();  // max_position()
  };
  const uint8_t* krows(const Stream& s) const { return s.in_arena >= 0 ? arena_.data() + s.in_arena : s.own_k.data(); }
  const uint8_t* vrows(const Stream& s) const {
    return s.in_arena >= 0 ? arena_.data() + s.in_arena + s.pos.size() * s.row : s.own_v.data();
  }
  uint8_t* krows(Stream& s) { return const_cast<uint8_t*>(std::as_const(*this).krows(s)); }
  uint8_t* vrows(Stream& s) { return const_cast<uint8_t*>(std::as_const(*this).vrows(s)); }
  void grow(Stream& s, int64_t need);
  float* layer_state(int layer);
  void compact(Stream& s, const std::vector<int32_t>& keep);
  void send_cold(int i, const std::vector<int32_t>& keep);
  void swap_tiers(int i, const std::vector<int32_t>& take, const std::vector<int32_t>& give,
                  std::vector<int32_t>& previous);

  KvCacheShape shape_;
  size_t row_bytes_ = 0;
  std::vector<Stream> streams_;
  std::vector<float> state_;           // every layer's recurrent state, back to back
  std::vector<int64_t> state_offset_;  // per layer: its first float in state_, -1 if none
  Rows arena_;              // streams laid out by reserve() (empty when none is)
  int arena_streams_ = 0;   // streams still in it: freed when the last one leaves
  int64_t n_processed_ = 0;
  int64_t peak_tokens_ = 0;
  size_t peak_bytes_ = 0;
  size_t live_bytes_ = 0;
  int64_t prune_events_ = 0;
  ColdStore cold_;
  int64_t recalled_rows_ = 0;
  size_t peak_cold_bytes_ = 0;
};

}  // namespace triattn
