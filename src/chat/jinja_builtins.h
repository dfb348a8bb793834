#pragma once
// Filters, tests and methods of the values a chat template uses (the Jinja2 builtins plus
// transformers' tojson), and the global functions of the HF chat environment. Each entry
// point charges `budget` for the strings it reads and the value it builds, and checks the
// size of what it builds before building it (jinja_budget.h, jinja_limits.h).
#include <optional>
#include <string>
#include <vector>

#include "chat/jinja_budget.h"
#include "chat/jinja_value.h"

namespace triattn::jinja {

bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

// `value | name(args)`. Throws Error (without a line; the interpreter adds it).
Value apply_filter(Budget& budget, const std::string& name, const Value& value, const CallArgs& args);
// `value is name(args)`.
bool apply_test(Budget& budget, const std::string& name, const Value& value, const CallArgs& args);
// `obj.name(args)` for str, dict and list methods; false if `name` is not a method of obj.
bool call_method(Budget& budget, const Value& obj, const std::string& name, const CallArgs& args, Value& result);

// Python-style operators shared by the interpreter and the filters.
Value binary_op(Budget& budget, const std::string& op, const Value& a, const Value& b);
bool compare_op(Budget& budget, const std::string& op, const Value& a, const Value& b);
// obj[key] and obj.attr with Jinja's fallbacks: a missing key or attribute gives undefined;
// only an undefined obj raises.
Value get_item(Budget& budget, const Value& obj, const Value& key);
Value get_attr(Budget& budget, const Value& obj, const std::string& name);
Value slice(Budget& budget, const Value& obj, const Value& start, const Value& stop, const Value& step);
// The items a `for` loop or list() visits, as a list value: the list itself (shared, not
// copied), dict keys, or str chars. Not charged: callers charge what they then do per item.
Value iterate(const Value& v);
// str.replace(old, new, count), refusing a result over kMaxStringBytes before building it.
std::string replace_checked(const std::string& s, const std::string& from, const std::string& to, int64_t count);
// str.split / str.rsplit (sep nullopt: on whitespace), refusing more than kMaxListItems parts
// before building them all.
std::vector<std::string> split_capped(const std::string& s, const std::optional<std::string>& sep,
                                      int64_t maxsplit = -1, bool from_right = false);

}  // namespace triattn::jinja
