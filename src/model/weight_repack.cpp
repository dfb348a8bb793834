#include "model/weight_repack.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "ops/ops.h"

namespace triattn {

namespace {

// The memory `data` came from is no longer read: an owned buffer is freed, pages of a mapped
// file are dropped from the process (they would fault back in from the file if touched, so
// this is safe even where a page is shared with a neighbouring tensor).
void release_source(ModelBuilder& model, const void* data, size_t bytes) {
  for (LargeBuffer& buf : model.owned())
    if (buf.data() == data) {
      buf = LargeBuffer();
      return;
    }
  for (const MappedFile* file : model.mapped_files()) file->release(data, bytes);
}

constexpr size_t kTensorAlign = 64;  // every repacked tensor starts on a cache line

// Whether `data` lies in a buffer the loader already made (a tensor rewritten at load time,
// in huge pages when large): copying it again would buy nothing.
bool in_owned_buffer(ModelBuilder& model, const void* data) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (const LargeBuffer& buf : model.owned())
    if (p >= buf.data() && p < buf.data() + buf.size()) return true;
  return false;
}

// A stack of expert matrices [n, rows, cols] as one matrix [n * rows, cols]: the same bytes.
TensorView as_matrix(const TensorView& t) {
  if (t.shape.size() != 3) return t;
  return TensorView{t.type, {t.shape[0] * t.shape[1], t.shape[2]}, t.data};
}

// The interleaved type `t` is rewritten into, if any. A stack of experts takes the type one
// expert's matrix would and is interleaved as one matrix of whole groups, so that each
// expert's slice (model/moe.h, expert_matrix) is itself an interleaved matrix.
std::optional<DType> interleaved(const TensorView& t) {
  if (t.shape.size() != 3) return ops::interleaved_type(t);
  return ops::interleaved_type(TensorView{t.type, {t.shape[1], t.shape[2]}, t.data});
}

// t as it will be stored (no data yet): its interleaved type if any, else itself.
TensorView repacked(const TensorView& t) {
  const std::optional<DType> type = interleaved(t);
  return TensorView{type ? *type : t.type, t.shape, nullptr};
}

}  // namespace

void repack_weights(ModelBuilder& model, int threads) {
  ModelWeights& w = model.weights();
  std::vector<TensorView*> matrices{&w.output, &w.tok_embd};
  for (LayerWeights& L : w.layers) {
    for (TensorView* t : L.matrices())
      if (!t->empty()) matrices.push_back(t);
    for (TensorView* t : L.expert_stacks())
      if (!t->empty()) matrices.push_back(t);
  }

  // One arena for every matrix: one huge-page buffer instead of one per tensor, which would
  // round each up to 2 MiB of resident memory.
  struct Item {
    TensorView source;
    size_t offset;
  };
  std::vector<Item> items;
  std::map<const void*, size_t> item_of;  // source data -> item (tensors shared by views)
  size_t total = 0;
  for (TensorView* t : matrices) {
    // The token embedding is only moved when tied to the output matrix: lookups read it row
    // by row, which the file's pages serve as well.
    if (t == &w.tok_embd || item_of.count(t->data)) continue;
    if (!interleaved(*t) && in_owned_buffer(model, t->data)) continue;
    item_of[t->data] = items.size();
    items.push_back({*t, total});
    total += (repacked(*t).nbytes() + kTensorAlign - 1) / kTensorAlign * kTensorAlign;
  }
  if (items.empty()) return;
  uint8_t* arena = model.own(total).data();

  // Tensor by tensor, rows split over the cores (the page faults of the new buffer and the
  // reads of the file dominate); each source is released as soon as it is copied, so the
  // peak is the arena plus one tensor.
  ThreadPool pool(threads);  // 0: hardware concurrency
  for (const Item& it : items) {
    uint8_t* dst = arena + it.offset;
    if (const std::optional<DType> type = interleaved(it.source)) {
      const int group = interleaved_rows(*type);
      const int64_t groups = it.source.rows() / group;
      pool.parallel_for(groups, [&](int64_t g0, int64_t g1, int) {
        ops::interleave(as_matrix(it.source), *type, dst, group * g0, group * g1);
      }, 64);
    } else {  // same layout, huge pages
      const size_t stride = it.source.row_stride();
      const auto* src = static_cast<const uint8_t*>(it.source.data);
      pool.parallel_for(it.source.rows(), [&](int64_t r0, int64_t r1, int) {
        std::memcpy(dst + r0 * stride, src + r0 * stride, static_cast<size_t>(r1 - r0) * stride);
      }, 256);
    }
    release_source(model, it.source.data, it.source.nbytes());
  }
  for (TensorView* t : matrices)
    if (auto found = item_of.find(t->data); found != item_of.end()) {
      const Item& it = items[found->second];
      *t = TensorView{repacked(it.source).type, it.source.shape, arena + it.offset};
    }
}

}  // namespace triattn
