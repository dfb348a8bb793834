#include "chat/jinja_value.h"

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

Value::Value(std::string s) : kind_(Kind::String), s_(std::move(s)) {}
Value::Value(const char* s) : kind_(Kind::String), s_(s) {}

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
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
    case Kind::String: return !s_.empty();
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
    case Kind::String: return s_;
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "None";
    case Kind::Bool: return b_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: return pystr::float_repr(f_);
    case Kind::String: return pystr::repr(s_);
    case Kind::List: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        out += (*list_)[i].repr();
      }
      if (tuple_ && list_->size() == 1) out += ",";
      return out + (tuple_ ? ")" : "]");
    }
    case Kind::Dict:
    case Kind::Namespace: {
      const ValueDict& d = kind_ == Kind::Dict ? *dict_ : *ns_;
      std::string out = "{";
      for (size_t i = 0; i < d.items.size(); ++i) {
        if (i) out += ", ";
        out += pystr::repr(d.items[i].first) + ": " + d.items[i].second.repr();
      }
      out += "}";
      return kind_ == Kind::Dict ? out : "<Namespace " + out + ">";
    }
    case Kind::Callable: return "<function " + fn_->name + ">";
  }
  return "";
}

bool Value::equals(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (kind_ == Kind::Float || o.kind_ == Kind::Float) return as_float() == o.as_float();
    return as_int() == o.as_int();
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return s_ == o.s_;
    case Kind::List: {
      if (tuple_ != o.tuple_ || list_->size() != o.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i)
        if (!(*list_)[i].equals((*o.list_)[i])) return false;
      return true;
    }
    case Kind::Dict: {
      // Python dict equality ignores order.
      if (dict_->items.size() != o.dict_->items.size()) return false;
      for (const auto& [k, v] : dict_->items) {
        const Value* ov = o.dict_->find(k);
        if (!ov || !v.equals(*ov)) return false;
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
