#include "kv/cold_store.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "ops/ops.h"

namespace triattn {

namespace {
// One row as f32, per thread: streams go cold in parallel (KvCache::apply).
std::vector<float>& row_scratch(int n) {
  thread_local std::vector<float> buf;
  if (static_cast<int>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf;
}

// Copies a row of `from` into `to`, converting through f32 where the types differ.
void convert_row(DType from, const void* src, DType to, void* dst, int n) {
  if (from == to) {
    std::memcpy(dst, src, triattn::row_bytes(from, n));
    return;
  }
  std::vector<float>& f = row_scratch(n);
  ops::dequantize_row(from, src, f.data(), n);
  ops::quantize_row(to, f.data(), dst, n);
}
}  // namespace

ColdStore::ColdStore(std::vector<int> stream_dims, size_t cap_bytes) : cap_(cap_bytes) {
  streams_.resize(stream_dims.size());
  for (size_t s = 0; s < stream_dims.size(); ++s) {
    const int d = stream_dims[s];
    if (d <= 0) continue;
    Stream& st = streams_[s];
    st.type = d % static_cast<int>(block_size(DType::Q8_0)) == 0 ? DType::Q8_0 : DType::F16;
    st.dim = d;
    st.row = triattn::row_bytes(st.type, d);
  }
}

void ColdStore::add(int stream, int32_t pos, DType hot_type, const void* k, const void* v) {
  Stream& s = streams_[static_cast<size_t>(stream)];
  if (s.row == 0) fail("cold store: stream ", stream, " keeps no cold rows");
  const int d = s.dim;
  const size_t at = s.k.size();
  s.k.resize(at + s.row);
  s.v.resize(at + s.row);
  convert_row(hot_type, k, s.type, s.k.data() + at, d);
  convert_row(hot_type, v, s.type, s.v.data() + at, d);
  s.pos.push_back(pos);
  s.useful.push_back(std::numeric_limits<float>::infinity());
}

void ColdStore::read(int stream, int64_t i, DType hot_type, void* k, void* v) const {
  const Stream& s = streams_[static_cast<size_t>(stream)];
  const int d = s.dim;
  convert_row(s.type, s.k.data() + static_cast<size_t>(i) * s.row, hot_type, k, d);
  convert_row(s.type, s.v.data() + static_cast<size_t>(i) * s.row, hot_type, v, d);
}

void ColdStore::remove(int stream, std::vector<int32_t> rows) {
  if (rows.empty()) return;
  Stream& s = streams_[static_cast<size_t>(stream)];
  std::sort(rows.begin(), rows.end());
  // Slides the rows after each removed one down, keeping arrival order.
  size_t out = static_cast<size_t>(rows.front()), r = 0;
  for (size_t i = out; i < s.pos.size(); ++i) {
    if (r < rows.size() && static_cast<size_t>(rows[r]) == i) {
      ++r;
      continue;
    }
    if (i != out) {
      std::memmove(s.k.data() + out * s.row, s.k.data() + i * s.row, s.row);
      std::memmove(s.v.data() + out * s.row, s.v.data() + i * s.row, s.row);
      s.pos[out] = s.pos[i];
      s.useful[out] = s.useful[i];
    }
    ++out;
  }
  s.k.resize(out * s.row);
  s.v.resize(out * s.row);
  s.pos.resize(out);
  s.useful.resize(out);
}

void ColdStore::clear() {
  for (Stream& s : streams_) s.k.clear(), s.v.clear(), s.pos.clear(), s.useful.clear();
}

size_t ColdStore::bytes() const {
  size_t b = 0;
  for (const Stream& s : streams_) b += s.pos.size() * slot_bytes(s);
  return b;
}

int64_t ColdStore::enforce_cap() {
  int cold_streams = 0;
  for (const Stream& s : streams_) cold_streams += s.row > 0;
  if (bytes() <= cap_ || cold_streams == 0) return 0;
  const size_t share = cap_ / static_cast<size_t>(cold_streams);
  int64_t dropped = 0;
  for (size_t si = 0; si < streams_.size(); ++si) {
    Stream& s = streams_[si];
    if (s.row == 0) continue;
    const size_t fits = share / slot_bytes(s);
    if (s.pos.size() <= fits) continue;
    std::vector<int32_t> order(s.pos.size());
    std::iota(order.begin(), order.end(), 0);
    // Least useful first; equal usefulness: the older position goes first.
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      if (s.useful[a] != s.useful[b]) return s.useful[a] < s.useful[b];
      return s.pos[a] < s.pos[b];
    });
    order.resize(s.pos.size() - fits);
    dropped += static_cast<int64_t>(order.size());
    remove(static_cast<int>(si), std::move(order));
  }
  dropped_ += dropped;
  return dropped;
}

}  // namespace triattn
