#pragma once
// One sequence's part of a forward call: its KV cache, the tokens that continue it (at
// positions cache.n_processed() + i), which logits to return, and who observes it.
#include <cstdint>
#include <span>

#include "kv/kv_cache.h"
#include "model/observer.h"

namespace triattn {

struct ForwardItem {
  KvCache* cache = nullptr;
  std::span<const int32_t> tokens;
  enum class Logits { None, Last, All } logits = Logits::Last;
  ForwardObserver* observer = nullptr;  // null: nobody observes this item
};

}  // namespace triattn
