// Jinja tests (`x is name`), including the comparison aliases select()/selectattr() use.
#include <map>

#include "chat/jinja_args.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_pystr.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

using TestFn = bool (*)(Budget&, const Value&, const CallArgs&);

Value arg0(const CallArgs& a, const char* test) {
  if (a.pos.empty()) fail("test '", test, "' needs an argument");
  return a.pos[0];
}

const std::map<std::string, TestFn>& tests() {
  static const std::map<std::string, TestFn> t = {
      {"defined", [](Budget&, const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](Budget&, const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](Budget&, const Value& v, const CallArgs&) { return v.is_none(); }},
      {"boolean", [](Budget&, const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"true", [](Budget&, const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](Budget&, const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](Budget&, const Value& v, const CallArgs&) { return v.is_int(); }},
      {"float", [](Budget&, const Value& v, const CallArgs&) { return v.is_float(); }},
      // Python's bool is a Number, so Jinja's `number` test accepts it.
      {"number", [](Budget&, const Value& v, const CallArgs&) { return v.is_number(); }},
      {"string", [](Budget&, const Value& v, const CallArgs&) { return v.is_string(); }},
      {"mapping", [](Budget&, const Value& v, const CallArgs&) { return v.is_dict(); }},
      {"iterable",
       [](Budget&, const Value& v, const CallArgs&) {
         return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
       }},
      {"sequence",
       [](Budget&, const Value& v, const CallArgs&) { return v.is_list() || v.is_dict() || v.is_string(); }},
      {"callable", [](Budget&, const Value& v, const CallArgs&) { return v.is_callable(); }},
      {"escaped", [](Budget&, const Value&, const CallArgs&) { return false; }},
      {"odd",
       [](Budget&, const Value& v, const CallArgs&) {
         if (!v.is_int()) fail("test 'odd' needs an integer, not ", v.type_name());
         return v.as_int() % 2 != 0;
       }},
      {"even",
       [](Budget&, const Value& v, const CallArgs&) {
         if (!v.is_int()) fail("test 'even' needs an integer, not ", v.type_name());
         return v.as_int() % 2 == 0;
       }},
      {"divisibleby",
       [](Budget&, const Value& v, const CallArgs& a) {
         Value d = arg0(a, "divisibleby");
         if (!v.is_int() || !d.is_int() || d.as_int() == 0) fail("test 'divisibleby' needs non-zero integers");
         return d.as_int() == -1 || v.as_int() % d.as_int() == 0;  // INT64_MIN % -1 traps
       }},
      {"lower",
       [](Budget&, const Value& v, const CallArgs&) {
         return v.is_string() && pystr::lower(v.str_ref()) == v.str_ref();
       }},
      {"upper",
       [](Budget&, const Value& v, const CallArgs&) {
         return v.is_string() && pystr::upper(v.str_ref()) == v.str_ref();
       }},
      {"sameas",
       [](Budget& budget, const Value& v, const CallArgs& a) {
         // Python `is`: identity. For the singletons (none, true, false) that is equality of
         // kind and value; other objects are only the same as themselves.
         Value o = arg0(a, "sameas");
         if (v.kind() != o.kind()) return false;
         if (v.is_none() || v.is_undefined()) return true;
         if (v.is_bool()) return v.as_bool() == o.as_bool();
         return v.equals(o, budget) && (v.is_int() || v.is_string());
       }},
      {"filter", [](Budget&, const Value& v, const CallArgs&) { return v.is_string() && is_known_filter(v.str_ref()); }},
      {"test", [](Budget&, const Value& v, const CallArgs&) { return v.is_string() && is_known_test(v.str_ref()); }},
  };
  return t;
}

// The comparison tests (`x is gt(1)`, `select('>', 1)`) and the operator each one is.
const std::map<std::string, std::string>& comparison_tests() {
  static const std::map<std::string, std::string> t = {
      {"in", "in"},  {"eq", "=="}, {"equalto", "=="},  {"==", "=="}, {"ne", "!="},          {"!=", "!="},
      {"lt", "<"},   {"<", "<"},   {"lessthan", "<"},  {"le", "<="}, {"<=", "<="},          {"gt", ">"},
      {">", ">"},    {"ge", ">="}, {">=", ">="},       {"greaterthan", ">"},
  };
  return t;
}

}  // namespace

bool is_known_test(const std::string& name) { return tests().count(name) != 0 || comparison_tests().count(name) != 0; }

bool apply_test(Budget& budget, const std::string& name, const Value& value, const CallArgs& args) {
  budget.read(value);
  if (auto c = comparison_tests().find(name); c != comparison_tests().end())
    return compare_op(budget, c->second, value, arg0(args, name.c_str()));
  auto it = tests().find(name);
  if (it == tests().end()) fail("no test named '", name, "'");
  return it->second(budget, value, args);
}

}  // namespace triattn::jinja
