#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "ops/ops.h"

namespace triattn {

void check_kv_type(DType type, int head_dim) {
  if (!is_kv_type(type))
    fail("KV cache: type ", dtype_name(type), " is not supported (use f16, f32 or q8_0)");
  if (head_dim % block_size(type) != 0)
    fail("KV cache: ", dtype_name(type), " holds rows in blocks of ", block_size(type),
         " elements, but this model's head_dim is ", head_dim, " (use --kv-type f16)");
}

KvCache::KvCache(const KvCacheShape& shape, int64_t reserve_tokens) : shape_(shape) {
  if (shape.n_layers <= 0 || shape.n_kv_heads <= 0 || shape.head_dim <= 0)
    fail("KV cache: invalid shape (", shape.n_layers, " layers, ", shape.n_kv_heads, " KV heads, head_dim ",
         shape.head_dim, ")");
  check_kv_type(shape.type, shape.head_dim);
  row_bytes_ = triattn::row_bytes(shape.type, shape.head_dim);
  streams_.resize(static_cast<size_t>(n_streams()));
  if (!shape.layer_window.empty() && static_cast<int>(shape.layer_window.size()) != shape.n_layers)
    fail("KV cache: ", shape.layer_window.size(), " layer windows for ", shape.n_layers, " layers");
  for (const std::vector<int32_t>* v : {&shape.layer_kv_heads, &shape.layer_head_dim})
    if (!v->empty() && static_cast<int>(v->size()) != shape.n_layers)
      fail("KV cache: ", v->size(), " per-layer KV shapes for ", shape.n_layers, " layers");
  for (int l = 0; l < shape.n_layers; ++l) {
    const int heads = shape.kv_heads(l), d = shape.dim(l);
    if (heads < 1 || heads > shape.n_kv_heads || d < 1)
      fail("KV cache: layer ", l, " has ", heads, " KV heads of ", d, " (at most ", shape.n_kv_heads, " heads)");
    check_kv_type(shape.type, d);
    for (int h = 0; h < heads; ++h) streams_[stream_index(l, h)].row = triattn::row_bytes(shape.type, d);
  }
  if (!shape.layer_state_floats.empty()) {
    if (static_cast<int>(shape.layer_state_floats.size()) != shape.n_layers)
      fail("KV cache: ", shape.layer_state_floats.size(), " layer state sizes for ", shape.n_layers, " layers");
    int64_t total = 0;
    state_offset_.assign(static_cast<size_t>(shape.n_layers), -1);
    for (int l = 0; l < shape.n_layers; ++l)
      if (shape.layer_state_floats[l] > 0) state_offset_[l] = total, total += shape.layer_state_floats[l];
    state_.assign(static_cast<size_t>(total), 0.0f);
  }
  if (reserve_tokens > 0) reserve(reserve_tokens);
}

float* KvCache::layer_state(int layer) {
  if (state_offset_.empty() || state_offset_[static_cast<size_t>(layer)] < 0) return nullptr;
  return state_.data() + state_offset_[static_cast<size_t>(layer)];
}

int64_t KvCache::max_size() const {
  int64_t m = 0;
  for (const Stream& s : streams_) m = std::max(m, s.n);
  return m;
}

int64_t KvCache::max_full_size() const {
  int64_t m = 0;
  for (int l = 0; l < shape_.n_layers; ++l)
    if (!uncompressed(l))
      for (int h = 0; h < shape_.n_kv_heads; ++h) m = std::max(m, size(l, h));
  return m;
}

void KvCache::grow(Stream& s, int64_t need) {
  const int64_t cap = static_cast<int64_t>(s.pos.size());
  if (need <= cap) return;
  const int64_t new_cap = std::max<int64_t>(need, std::max<int64_t>(64, cap * 2));
  const size_t live = static_cast<size_t>(s.n) * s.row;
  Rows k(static_cast<size_t>(new_cap) * s.row), v(k.size());
  if (live) {
    std::memcpy(k.data(), krows(s), live);
    std::memcpy(v.data(), vrows(s), live);
  }
  s.own_k.swap(k);
  s.own_v.swap(v);
  if (s.in_arena >= 0) {
    // Out of the arena: its share goes back to the system now (a full-attention cache that
    // outgrows its reservation would otherwise hold the old and the new rows of every stream
    // at once), the arena itself once no stream is left in it.
    release_pages(arena_.data() + s.in_arena, 2 * static_cast<size_t>(cap) * s.row);
    s.in_arena = -1;
    if (--arena_streams_ == 0) Rows().swap(arena_);
  }
  s.pos.resize(static_cast<size_t>(new_cap));
}

void KvCache::reserve(int64_t n) {
  const size_t rows = static_cast<size_t>(std::max<int64_t>(n, 0));
  const bool empty = std::all_of(streams_.begin(), streams_.end(), [](const Stream& s) { return s.pos.empty(); });
  std::vector<Stream*> kv;  // layers without KV, and heads a layer does not have, reserve nothing
  size_t total = 0;
  for (int l = 0; l < shape_.n_layers; ++l)
    if (has_kv(l))
      for (int h = 0; h < shape_.kv_heads(l); ++h) {
        kv.push_back(&streams_[stream_index(l, h)]);
        total += 2 * rows * kv.back()->row;
      }
  if (!empty || total == 0) {
    for (Stream* s : kv) grow(*s, n);
    return;
  }
  // Every stream's K rows then V rows, side by side, all in huge pages (Stream).
  arena_ = Rows(total);
  size_t at = 0;
  for (Stream* s : kv) {
    s->in_arena = static_cast<int64_t>(at);
    s->pos.resize(rows);
    at += 2 * rows * s->row;
  }
  arena_streams_ = static_cast<int>(kv.size());
}

namespace {
void store_row(DType type, const float* src, uint8_t* dst, int n) {
  if (type == DType::F32)
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
  else if (type == DType::F16)
    ops::f32_to_f16_row(src, reinterpret_cast<uint16_t*>(dst), n);
  else
    ops::f32_to_q8_0_row(src, dst, n);
}
}  // namespace

void KvCache::append(int layer, int32_t pos, const float* k, const float* v) {
  const int d = shape_.dim(layer);
  for (int h = 0; h < shape_.kv_heads(layer); ++h) {
    Stream& s = streams_[stream_index(layer, h)];
    grow(s, s.n + 1);
    store_row(shape_.type, k + h * d, krows(s) + s.n * s.row, d);
    store_row(shape_.type, v + h * d, vrows(s) + s.n * s.row, d);
    s.pos[s.n] = pos;
    s.max_pos = std::max(s.max_pos, pos);
    ++s.n;
    live_bytes_ += 2 * s.row;
    peak_tokens_ = std::max(peak_tokens_, s.n);
  }
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
}

void KvCache::apply(const KeepPlan& plan, ThreadPool* pool) {
  if (static_cast<int>(plan.keep.size()) != n_streams())
    fail("KV cache: plan has ", plan.keep.size(), " streams, cache has ", n_streams());
  // Check the whole plan before moving anything: a bad plan leaves the cache untouched.
  for (int i = 0; i < n_streams(); ++i) {
    int32_t prev = -1;
    for (int32_t idx : plan.keep[i]) {
      if (idx <= prev || idx >= streams_[i].n) fail("KV cache: plan for stream ", i, " has bad index ", idx);
      prev = idx;
    }
  }
  parallel_for_dynamic(pool, n_streams(), [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      if (cold_.enabled() && cold_.row_bytes(static_cast<int>(i)) > 0) send_cold(static_cast<int>(i), plan.keep[i]);
      compact(streams_[i], plan.keep[i]);
    }
  });
  for (int i = 0; i < n_streams(); ++i) {
    Stream& s = streams_[i];
    const int64_t kept = static_cast<int64_t>(plan.keep[i].size());
    live_bytes_ -= static_cast<size_t>(s.n - kept) * 2 * s.row;
    s.n = kept;
  }
  ++prune_events_;
  if (cold_.enabled()) {
    cold_.enforce_cap();
    peak_cold_bytes_ = std::max(peak_cold_bytes_, cold_.bytes());
  }
}

// The rows of stream i that `keep` (increasing) leaves out go to the cold store.
void KvCache::send_cold(int i, const std::vector<int32_t>& keep) {
  const Stream& s = streams_[static_cast<size_t>(i)];
  size_t k = 0;
  for (int64_t r = 0; r < s.n; ++r) {
    if (k < keep.size() && keep[k] == r) {
      ++k;
      continue;
    }
    cold_.add(i, s.pos[r], shape_.type, krows(s) + r * s.row, vrows(s) + r * s.row);
  }
}

int64_t KvCache::rewindable() const {
  int64_t n = n_processed_;
  for (const Stream& s : streams_) {
    if (s.row == 0) continue;
    int64_t k = 0;  // newest rows at positions n_processed_ - 1, n_processed_ - 2, ...
    while (k < std::min(n, s.n) && s.pos[s.n - 1 - k] == n_processed_ - 1 - k) ++k;
    n = k;
  }
  return n;
}

void KvCache::rewind_last(int64_t n) {
  if (!can_rewind()) fail("KV cache: a token cannot be taken back from a cache with recurrent state or sliding windows");
  if (n < 0 || n > rewindable())
    fail("KV cache: cannot take back ", n, " tokens: only the last ", rewindable(), " are the newest rows of every stream");
  for (Stream& s : streams_) {
    if (s.row == 0) continue;
    s.n -= n;
    live_bytes_ -= 2 * s.row * static_cast<size_t>(n);
    s.max_pos = s.n ? *std::max_element(s.pos.begin(), s.pos.begin() + s.n) : std::numeric_limits<int32_t>::min();
  }
  n_processed_ -= n;
}

void KvCache::enable_cold(size_t cap_bytes) {
  std::vector<int> dims(static_cast<size_t>(n_streams()), 0);
  for (int l = 0; l < shape_.n_layers; ++l)
    if (!uncompressed(l))
      for (int h = 0; h < shape_.kv_heads(l); ++h) dims[stream_index(l, h)] = shape_.dim(l);
  cold_ = ColdStore(std::move(dims), cap_bytes);
}

std::vector<std::vector<int32_t>> KvCache::recall(const RecallPlan& plan, ThreadPool* pool) {
  if (!cold_.enabled()) fail("KV cache: recall without a cold tier");
  if (static_cast<int>(plan.take.size()) != n_streams() || static_cast<int>(plan.give.size()) != n_streams())
    fail("KV cache: recall plan has ", plan.take.size(), " streams, cache has ", n_streams());
  // Check the whole plan before moving anything: a bad plan leaves the cache untouched.
  for (int i = 0; i < n_streams(); ++i) {
    const auto& take = plan.take[i];
    const auto& give = plan.give[i];
    if (take.size() != give.size())
      fail("KV cache: recall plan for stream ", i, " takes ", take.size(), " rows and gives ", give.size());
    if (!take.empty() && cold_.row_bytes(i) == 0) fail("KV cache: recall plan for stream ", i, " of an uncompressed layer");
    for (size_t j = 0; j < take.size(); ++j) {
      if (take[j] < 0 || take[j] >= cold_.size(i) || (j && take[j] <= take[j - 1]))
        fail("KV cache: recall plan for stream ", i, " has bad cold index ", take[j]);
      if (give[j] < 0 || give[j] >= streams_[i].n || (j && give[j] <= give[j - 1]))
        fail("KV cache: recall plan for stream ", i, " has bad hot index ", give[j]);
    }
  }
  std::vector<std::vector<int32_t>> previous(static_cast<size_t>(n_streams()));
  parallel_for_dynamic(pool, n_streams(), [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) swap_tiers(static_cast<int>(i), plan.take[i], plan.give[i], previous[i]);
  });
  for (const auto& t : plan.take) recalled_rows_ += static_cast<int64_t>(t.size());
  return previous;
}

// One stream's part of recall(): the hot rows and the taken cold rows, merged in position
// order, become the stream; the given rows go cold. previous[r]: the index new row r had, -1
// for a taken row.
void KvCache::swap_tiers(int i, const std::vector<int32_t>& take, const std::vector<int32_t>& give,
                         std::vector<int32_t>& previous) {
  Stream& s = streams_[static_cast<size_t>(i)];
  const int64_t n = s.n;
  const size_t taken = take.size();
  // The taken rows, in the hot type, sorted by position (cold rows sit in arrival order).
  std::vector<int32_t> order(taken);
  for (size_t j = 0; j < taken; ++j) order[j] = static_cast<int32_t>(j);
  const int32_t* cold_pos = cold_.positions(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return cold_pos[take[a]] < cold_pos[take[b]]; });
  std::vector<uint8_t> tk(taken * s.row), tv(taken * s.row);
  std::vector<int32_t> tpos(taken);
  for (size_t j = 0; j < taken; ++j) {
    cold_.read(i, take[order[j]], shape_.type, tk.data() + j * s.row, tv.data() + j * s.row);
    tpos[j] = cold_pos[take[order[j]]];
  }
  // Where each new row comes from: the kept hot rows and the taken ones, merged by position.
  previous.clear();
  previous.reserve(static_cast<size_t>(n));
  size_t gi = 0, ti = 0;
  for (int64_t r = 0; r <= n; ++r) {
    if (r < n && gi < give.size() && give[gi] == r) {
      ++gi;
      continue;
    }
    for (; ti < taken && (r == n || tpos[ti] < s.pos[r]); ++ti) previous.push_back(-1);
    if (r < n) previous.push_back(static_cast<int32_t>(r));
  }
  if (taken == 0) return;
  // The given rows go cold (appended: the taken indices stay valid), then the taken leave it.
  for (int32_t g : give) cold_.add(i, s.pos[g], shape_.type, krows(s) + g * s.row, vrows(s) + g * s.row);
  cold_.remove(i, take);
  std::vector<uint8_t> nk(static_cast<size_t>(n) * s.row), nv(nk.size());
  std::vector<int32_t> npos(static_cast<size_t>(n));
  ti = 0;
  for (size_t out = 0; out < previous.size(); ++out) {
    const bool back = previous[out] < 0;
    const size_t from = back ? ti : static_cast<size_t>(previous[out]);
    std::memcpy(nk.data() + out * s.row, (back ? tk.data() : krows(s)) + from * s.row, s.row);
    std::memcpy(nv.data() + out * s.row, (back ? tv.data() : vrows(s)) + from * s.row, s.row);
    npos[out] = back ? tpos[ti++] : s.pos[from];
  }
  std::memcpy(krows(s), nk.data(), nk.size());
  std::memcpy(vrows(s), nv.data(), nv.size());
  std::memcpy(s.pos.data(), npos.data(), npos.size() * sizeof(int32_t));
}

void KvCache::drop_before(int layer, int32_t min_pos) {
  for (int h = 0; h < shape_.kv_heads(layer); ++h) {
    Stream& s = streams_[stream_index(layer, h)];
    int64_t first = 0;  // positions increase along a stream (appends in order, plans keep order)
    while (first < s.n && s.pos[first] < min_pos) ++first;
    if (first == 0) continue;
    const int64_t rest = s.n - first;
    std::memmove(krows(s), krows(s) + first * s.row, static_cast<size_t>(rest) * s.row);
    std::memmove(vrows(s), vrows(s) + first * s.row, static_cast<size_t>(rest) * s.row);
    std::memmove(s.pos.data(), s.pos.data() + first, static_cast<size_t>(rest) * sizeof(int32_t));
    live_bytes_ -= static_cast<size_t>(first) * 2 * s.row;
    s.n = rest;
  }
}

// Moves the kept rows (checked by apply) to the front of the stream, in order; apply then
// sets the stream's size. Touches only this stream, so streams compact in parallel.
void KvCache::compact(Stream& s, const std::vector<int32_t>& keep) {
  uint8_t* k = krows(s);
  uint8_t* v = vrows(s);
  int64_t out = 0;
  for (int32_t idx : keep) {
    if (idx != out) {
      std::memmove(k + out * s.row, k + idx * s.row, s.row);
      std::memmove(v + out * s.row, v + idx * s.row, s.row);
      s.pos[out] = s.pos[idx];
    }
    ++out;
  }
}

void KvCache::clear() {
  for (Stream& s : streams_) s.n = 0, s.max_pos = std::numeric_limits<int32_t>::min();
  cold_.clear();
  live_bytes_ = 0;
  n_processed_ = 0;
  std::fill(state_.begin(), state_.end(), 0.0f);
}

size_t KvCache::bytes_in_use() const { return live_bytes_; }

int64_t KvCache::capacity() const {
  int64_t m = 0;
  for (const Stream& s : streams_) m = std::max(m, static_cast<int64_t>(s.pos.size()));
  return m;
}

}  // namespace triattn
