#include "chat/jinja_budget.h"

#include "core/error.h"

namespace triattn::jinja {

void Budget::built(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::String:
    case Value::Kind::Undefined: bytes(v.str_ref().size()); break;
    case Value::Kind::List: bytes(v.list_ref().size() * sizeof(Value)); break;
    case Value::Kind::Dict: bytes(v.dict_ref().items.size() * sizeof(v.dict_ref().items[0])); break;
    case Value::Kind::Namespace:
      bytes((v.namespace_ref().items.size() + 1) * sizeof(v.namespace_ref().items[0]));
      break;
    default: break;
  }
}

void Budget::exhausted() {
  fail("more than ", kMaxSteps, " evaluation steps (the limit; a real chat template needs a few thousand)");
}

}  // namespace triattn::jinja
