#pragma once
// Filters, tests and methods of the values a chat template uses (the Jinja2 builtins plus
// transformers' tojson), and the global functions of the HF chat environment.
#include <string>

#include "chat/jinja_value.h"

namespace triattn::jinja {

bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

// `value | name(args)`. Throws Error (without a line; the interpreter adds it).
Value apply_filter(const std::string& name, const Value& value, const CallArgs& args);
// `value is name(args)`.
bool apply_test(const std::string& name, const Value& value, const CallArgs& args);
// `obj.name(args)` for str, dict and list methods; false if `name` is not a method of obj.
bool call_method(const Value& obj, const std::string& name, const CallArgs& args, Value& result);

// Python-style operators shared by the interpreter and the filters.
Value binary_op(const std::string& op, const Value& a, const Value& b);
bool compare_op(const std::string& op, const Value& a, const Value& b);
// obj[key] and obj.attr with Jinja's fallbacks: a missing key or attribute gives undefined;
// only an undefined obj raises.
Value get_item(const Value& obj, const Value& key);
Value get_attr(const Value& obj, const std::string& name);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// Iteration order of a value in a `for` loop or list(): list items, dict keys, str chars.
ValueList iterate(const Value& v);

}  // namespace triattn::jinja
