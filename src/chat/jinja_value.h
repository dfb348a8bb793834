#pragma once
// The value model of the Jinja interpreter. It mirrors the Python objects a chat template sees
// under transformers' Jinja2 environment: undefined (distinct from none), bool, int, float,
// str, list, dict (insertion-ordered, like Python dicts), namespace() objects and callables.
// Lists and dicts are immutable and shared (the HF environment is an ImmutableSandbox), so
// copying a Value is cheap; only namespaces are mutable, through `set ns.attr = ...`.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace triattn::jinja {

class Value;
using ValueList = std::vector<Value>;

// Insertion-ordered string-keyed map; linear lookup is fine for chat-sized objects.
struct ValueDict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value v);  // replaces an existing key in place
};

// Arguments of a call: positional then keyword, as written.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

struct Callable {
  std::string name;
  std::function<Value(const CallArgs&)> fn;
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

  Value() = default;  // undefined
  Value(std::string s);
  Value(const char* s);
  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value list(ValueList items);
  // A Python tuple: a list that prints as (a, b) and is never equal to a list.
  static Value tuple(ValueList items);
  static Value dict(ValueDict d);
  static Value new_namespace(ValueDict attrs);
  static Value callable(std::string name, std::function<Value(const CallArgs&)> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tuple() const { return kind_ == Kind::List && tuple_; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_namespace() const { return kind_ == Kind::Namespace; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  bool as_bool() const { return b_; }
  int64_t as_int() const;    // Int or Bool
  double as_float() const;   // any number
  const std::string& str_ref() const { return s_; }  // String (or the hint of Undefined)
  const ValueList& list_ref() const { return *list_; }
  const ValueDict& dict_ref() const { return *dict_; }
  ValueDict& namespace_ref() const { return *ns_; }
  const Callable& callable_ref() const { return *fn_; }
  const std::string& undefined_hint() const { return s_; }

  // Python truthiness (undefined is false).
  bool truthy() const;
  // Python str(): what `{{ value }}` prints. Undefined prints as "".
  std::string to_str() const;
  // Python repr(), used inside str() of containers.
  std::string repr() const;
  // Python ==, with 1 == 1.0 == True; undefined equals only undefined.
  bool equals(const Value& o) const;
  // A short type name for error messages ("str", "list", "dict", ...).
  std::string type_name() const;

 private:
  Kind kind_ = Kind::Undefined;
  bool b_ = false;
  bool tuple_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<const ValueDict> dict_;
  std::shared_ptr<ValueDict> ns_;
  std::shared_ptr<const Callable> fn_;
};

// Converts parsed JSON (nlohmann::json or nlohmann::ordered_json) to a Value, keeping the key
// order the json type has (sorted for nlohmann::json, insertion order for ordered_json).
template <class Json>
Value value_from_json(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return Value::integer(static_cast<int64_t>(j.template get<uint64_t>()));
    case nlohmann::json::value_t::number_float: return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string: return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(value_from_json(e));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      ValueDict d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) d.items.emplace_back(it.key(), value_from_json(it.value()));
      return Value::dict(std::move(d));
    }
    default: return Value::none();  // binary / discarded: nothing a template can use
  }
}

}  // namespace triattn::jinja
