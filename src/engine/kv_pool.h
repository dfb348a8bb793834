#pragma once
// The KV memory that running and kept sequences reserve from (`serve --kv-memory`): a
// sequence reserves its bound before it is admitted and keeps the reservation while it
// runs and, for conversation reuse, while it is kept after it finished; dropping or reusing
// a kept sequence hands its reservation on. Counts bytes only; the scheduler that owns it
// guards it with its lock.
#include <cstddef>

namespace triattn {

class KvPool {
 public:
  // capacity 0: no limit.
  explicit KvPool(size_t capacity) : capacity_(capacity) {}
  size_t capacity() const { return capacity_; }
  // Whether `need` more bytes fit once `freed` reserved bytes are given back first.
  bool fits(size_t need, size_t freed = 0) const { return capacity_ == 0 || reserved_ - freed + need <= capacity_; }
  // Could a reservation of this size ever fit (into an empty pool)?
  bool could_ever_fit(size_t need) const { return capacity_ == 0 || need <= capacity_; }
  void reserve(size_t bytes) { reserved_ += bytes; }
  void release(size_t bytes) { reserved_ -= bytes; }
  // A finished sequence's reservation (still reserved) now belongs to a kept sequence.
  void keep(size_t bytes) { kept_ += bytes; }
  // A kept sequence is resumed (its reservation runs again) or dropped (release() it too).
  void unkeep(size_t bytes) { kept_ -= bytes; }

  size_t reserved() const { return reserved_; }  // running and kept sequences
  size_t kept() const { return kept_; }          // kept sequences alone

 private:
  size_t capacity_;
  size_t reserved_ = 0;
  size_t kept_ = 0;
};

}  // namespace triattn
