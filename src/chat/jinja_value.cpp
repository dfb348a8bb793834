#include "chat/jinja_value.h"

#include <algorithm>

#include "chat/jinja_budget.h"
#include "chat/jinja_pystr.h"

namespace triattn::jinja {

const Value* ValueDict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void ValueDict::set(const std::string& key, Value v) {
  for (auto& [k, old] : items)
    if (k == key) {
      old = std::move(v);
      return;
    }
  items.emplace_back(key, std::move(v));
}

Value::Value(std::string s) : kind_(Kind::String), s_(std::make_shared<const std::string>(std::move(s))) {}
Value::Value(const char* s) : kind_(Kind::String), s_(std::make_shared<const std::string>(s)) {}

const std::string& Value::empty_string() {
  static const std::string empty;
  return empty;
}

uint16_t Value::container_depth(int deepest_item) {
  if (deepest_item + 1 > kMaxNesting) fail("values nested more than ", kMaxNesting, " levels deep (the limit)");
  return static_cast<uint16_t>(deepest_item + 1);
}

Value Value::undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.s_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.i_ = i;
  return v;
}
Value Value::number(double d) {
  Value v;
  v.kind_ = Kind::Float;
  v.f_ = d;
  return v;
}
Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::List;
  int deepest = 0;
  for (const Value& e : items) deepest = std::max(deepest, static_cast<int>(e.depth_));
  v.depth_ = container_depth(deepest);
  v.list_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}
Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.tuple_ = true;
  return v;
}
Value Value::dict(ValueDict d) {
  Value v;
  v.kind_ = Kind::Dict;
  int deepest = 0;
  for (const auto& kv : d.items) deepest = std::max(deepest, static_cast<int>(kv.second.depth_));
  v.depth_ = container_depth(deepest);
  v.dict_ = std::make_shared<const ValueDict>(std::move(d));
  return v;
}
Value Value::new_namespace(ValueDict attrs) {
  Value v;
  v.kind_ = Kind::Namespace;
  v.ns_ = std::make_shared<ValueDict>(std::move(attrs));
  return v;
}
Value Value::callable(std::string name, std::function<Value(const CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::Callable;
  v.fn_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

int64_t Value::as_int() const {
  if (kind_ == Kind::Bool) return b_ ? 1 : 0;
  if (kind_ == Kind::Float) return static_cast<int64_t>(f_);
  return i_;
}

double Value::as_float() const {
  if (kind_ == Kind::Float) return f_;
  return static_cast<double>(as_int());
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b_;
    case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0.0;
    case Kind::String: return !s_->empty();
    case Kind::List: return !list_->empty();
    case Kind::Dict: return !dict_->items.empty();
    case Kind::Namespace:
    case Kind::Callable: return true;
  }
  return false;
}

std::string Value::to_str() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::String: return *s_;
    default: return repr();
  }
}

std::string Value::repr() const {
  CappedString out;
  repr_into(out, 0);
  return out.take();
}

// Writes into one capped buffer, so a value that prints huge fails at the limit instead of
// building its parts first. `level` guards the recursion: namespaces are mutable and may
// hold themselves.
void Value::repr_into(CappedString& out, int level) const {
  if (level > kMaxNesting) fail("values nested more than ", kMaxNesting, " levels deep (the limit)");
  switch (kind_) {
    case Kind::Undefined: out.append("Undefined"); return;
    case Kind::None: out.append("None"); return;
    case Kind::Bool: out.append(b_ ? "True" : "False"); return;
    case Kind::Int: out.append(std::to_string(i_)); return;
    case Kind::Float: out.append(pystr::float_repr(f_)); return;
    case Kind::String: out.append(pystr::repr(*s_)); return;
    case Kind::List: {
      out.append(tuple_ ? "(" : "[");
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out.append(", ");
        (*list_)[i].repr_into(out, level + 1);
      }
      if (tuple_ && list_->size() == 1) out.append(",");
      out.append(tuple_ ? ")" : "]");
      return;
    }
    case Kind::Dict:
    case Kind::Namespace: {
      const ValueDict& d = kind_ == Kind::Dict ? *dict_ : *ns_;
      out.append(kind_ == Kind::Dict ? "{" : "<Namespace {");
      for (size_t i = 0; i < d.items.size(); ++i) {
        if (i) out.append(", ");
        out.append(pystr::repr(d.items[i].first));
        out.append(": ");
        d.items[i].second.repr_into(out, level + 1);
      }
      out.append(kind_ == Kind::Dict ? "}" : "}>");
      return;
    }
    case Kind::Callable: out.append("<function " + fn_->name + ">"); return;
  }
}

bool Value::equals(const Value& o, Budget& budget) const {
  budget.step();
  if (is_number() && o.is_number()) {
    if (kind_ == Kind::Float || o.kind_ == Kind::Float) return as_float() == o.as_float();
    return as_int() == o.as_int();
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String:
      if (s_ == o.s_) return true;  // the same shared string
      budget.bytes(std::min(s_->size(), o.s_->size()));
      return *s_ == *o.s_;
    case Kind::List: {
      if (list_ == o.list_) return true;
      if (tuple_ != o.tuple_ || list_->size() != o.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i)
        if (!(*list_)[i].equals((*o.list_)[i], budget)) return false;
      return true;
    }
    case Kind::Dict: {
      if (dict_ == o.dict_) return true;
      // Python dict equality ignores order; each lookup is a linear scan.
      if (dict_->items.size() != o.dict_->items.size()) return false;
      for (const auto& [k, v] : dict_->items) {
        budget.step(static_cast<int64_t>(o.dict_->items.size()));
        const Value* ov = o.dict_->find(k);
        if (!ov || !v.equals(*ov, budget)) return false;
      }
      return true;
    }
    case Kind::Namespace: return ns_ == o.ns_;
    case Kind::Callable: return fn_ == o.fn_;
    default: return false;
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "none";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "namespace";
    case Kind::Callable: return "function";
  }
  return "?";
}

}  // namespace triattn::jinja
