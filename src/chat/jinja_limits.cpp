#include "chat/jinja_limits.h"

#include <limits>

#include "core/error.h"

namespace triattn::jinja {

void check_string_size(size_t bytes) {
  if (bytes > kMaxStringBytes)
    fail("a string of ", bytes, " bytes is over the limit of ", kMaxStringBytes, " bytes (16 MiB) for one value");
}

void check_list_size(size_t items) {
  if (items > kMaxListItems)
    fail("a list of ", items, " items is over the limit of ", kMaxListItems, " items for one value");
}

size_t saturating_mul(size_t a, size_t b) {
  if (a != 0 && b > std::numeric_limits<size_t>::max() / a) return std::numeric_limits<size_t>::max();
  return a * b;
}

}  // namespace triattn::jinja
