#pragma once
// The value model of the Jinja interpreter. It mirrors the Python objects a chat template sees
// under transformers' Jinja2 environment: undefined (distinct from none), bool, int, float,
// str, list, dict (insertion-ordered, like Python dicts), namespace() objects and callables.
// Strings, lists and dicts are immutable and shared (the HF environment is an
// ImmutableSandbox), so copying a Value is cheap whatever its size; only namespaces are
// mutable, through `set ns.attr = ...`. Lists and dicts know how deeply they nest, and refuse
// to nest deeper than kMaxNesting.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/jinja_limits.h"
#include "core/error.h"

namespace triattn::jinja {

class Value;
class Budget;
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
  const std::string& str_ref() const { return s_ ? *s_ : empty_string(); }  // String (or the hint of Undefined)
  const ValueList& list_ref() const { return *list_; }
  const ValueDict& dict_ref() const { return *dict_; }
  ValueDict& namespace_ref() const { return *ns_; }
  const Callable& callable_ref() const { return *fn_; }
  const std::string& undefined_hint() const { return str_ref(); }
  // Levels of lists and dicts inside this value: 0 for a scalar, 1 for [1, 2], 2 for [[1]].
  int depth() const { return depth_; }

  // Python truthiness (undefined is false).
  bool truthy() const;
  // Python str(): what `{{ value }}` prints. Undefined prints as "". Throws Error past
  // kMaxStringBytes (a small list that shares one big string many times prints huge).
  std::string to_str() const;
  // Python repr(), used inside str() of containers; the same limit.
  std::string repr() const;
  // Python ==, with 1 == 1.0 == True; undefined equals only undefined. Charges the budget
  // for each item compared: shared parts make a deep comparison much bigger than the values.
  bool equals(const Value& o, Budget& budget) const;
  // A short type name for error messages ("str", "list", "dict", ...).
  std::string type_name() const;

 private:
  static const std::string& empty_string();
  void repr_into(CappedString& out, int level) const;
  // Depth of a new list or dict whose deepest item has depth `deepest_item`; throws Error
  // past kMaxNesting.
  static uint16_t container_depth(int deepest_item);

  Kind kind_ = Kind::Undefined;
  bool b_ = false;
  bool tuple_ = false;
  uint16_t depth_ = 0;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<const ValueDict> dict_;
  std::shared_ptr<ValueDict> ns_;
  std::shared_ptr<const Callable> fn_;
};

// Converts parsed JSON (nlohmann::json or nlohmann::ordered_json) to a Value, keeping the key
// order the json type has (sorted for nlohmann::json, insertion order for ordered_json).
// Throws Error for JSON nested deeper than kMaxNesting (it comes from requests).
template <class Json>
Value value_from_json(const Json& j, int level = 0) {
  if (level > kMaxNesting) fail("chat template variables nested more than ", kMaxNesting, " levels deep");
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
      for (const auto& e : j) items.push_back(value_from_json(e, level + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      ValueDict d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it)
        d.items.emplace_back(it.key(), value_from_json(it.value(), level + 1));
      return Value::dict(std::move(d));
    }
    default: return Value::none();  // binary / discarded: nothing a template can use
  }
}

}  // namespace triattn::jinja
