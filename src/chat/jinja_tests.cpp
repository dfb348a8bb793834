// Jinja tests (`x is name`), including the comparison aliases select()/selectattr() use.
#include <map>

#include "chat/jinja_args.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_pystr.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

using TestFn = bool (*)(const Value&, const CallArgs&);

Value arg0(const CallArgs& a, const char* test) {
  if (a.pos.empty()) fail("test '", test, "' needs an argument");
  return a.pos[0];
}

const std::map<std::string, TestFn>& tests() {
  static const std::map<std::string, TestFn> t = {
      {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
      // Python's bool is a Number, so Jinja's `number` test accepts it.
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
      {"iterable",
       [](const Value& v, const CallArgs&) { return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined(); }},
      {"sequence", [](const Value& v, const CallArgs&) { return v.is_list() || v.is_dict() || v.is_string(); }},
      {"callable", [](const Value& v, const CallArgs&) { return v.is_callable(); }},
      {"escaped", [](const Value&, const CallArgs&) { return false; }},
      {"odd",
       [](const Value& v, const CallArgs&) {
         if (!v.is_int()) fail("test 'odd' needs an integer, not ", v.type_name());
         return v.as_int() % 2 != 0;
       }},
      {"even",
       [](const Value& v, const CallArgs&) {
         if (!v.is_int()) fail("test 'even' needs an integer, not ", v.type_name());
         return v.as_int() % 2 == 0;
       }},
      {"divisibleby",
       [](const Value& v, const CallArgs& a) {
         Value d = arg0(a, "divisibleby");
         if (!v.is_int() || !d.is_int() || d.as_int() == 0) fail("test 'divisibleby' needs non-zero integers");
         return v.as_int() % d.as_int() == 0;
       }},
      {"lower",
       [](const Value& v, const CallArgs&) { return v.is_string() && pystr::lower(v.str_ref()) == v.str_ref(); }},
      {"upper",
       [](const Value& v, const CallArgs&) { return v.is_string() && pystr::upper(v.str_ref()) == v.str_ref(); }},
      {"sameas",
       [](const Value& v, const CallArgs& a) {
         // Python `is`: identity. For the singletons (none, true, false) that is equality of
         // kind and value; other objects are only the same as themselves.
         Value o = arg0(a, "sameas");
         if (v.kind() != o.kind()) return false;
         if (v.is_none() || v.is_undefined()) return true;
         if (v.is_bool()) return v.as_bool() == o.as_bool();
         return v.equals(o) && (v.is_int() || v.is_string());
       }},
      {"in", [](const Value& v, const CallArgs& a) { return compare_op("in", v, arg0(a, "in")); }},
      {"eq", [](const Value& v, const CallArgs& a) { return compare_op("==", v, arg0(a, "eq")); }},
      {"equalto", [](const Value& v, const CallArgs& a) { return compare_op("==", v, arg0(a, "equalto")); }},
      {"==", [](const Value& v, const CallArgs& a) { return compare_op("==", v, arg0(a, "==")); }},
      {"ne", [](const Value& v, const CallArgs& a) { return compare_op("!=", v, arg0(a, "ne")); }},
      {"!=", [](const Value& v, const CallArgs& a) { return compare_op("!=", v, arg0(a, "!=")); }},
      {"lt", [](const Value& v, const CallArgs& a) { return compare_op("<", v, arg0(a, "lt")); }},
      {"lessthan", [](const Value& v, const CallArgs& a) { return compare_op("<", v, arg0(a, "lessthan")); }},
      {"<", [](const Value& v, const CallArgs& a) { return compare_op("<", v, arg0(a, "<")); }},
      {"le", [](const Value& v, const CallArgs& a) { return compare_op("<=", v, arg0(a, "le")); }},
      {"<=", [](const Value& v, const CallArgs& a) { return compare_op("<=", v, arg0(a, "<=")); }},
      {"gt", [](const Value& v, const CallArgs& a) { return compare_op(">", v, arg0(a, "gt")); }},
      {"greaterthan", [](const Value& v, const CallArgs& a) { return compare_op(">", v, arg0(a, "greaterthan")); }},
      {">", [](const Value& v, const CallArgs& a) { return compare_op(">", v, arg0(a, ">")); }},
      {"ge", [](const Value& v, const CallArgs& a) { return compare_op(">=", v, arg0(a, "ge")); }},
      {">=", [](const Value& v, const CallArgs& a) { return compare_op(">=", v, arg0(a, ">=")); }},
      {"filter", [](const Value& v, const CallArgs&) { return v.is_string() && is_known_filter(v.str_ref()); }},
      {"test", [](const Value& v, const CallArgs&) { return v.is_string() && is_known_test(v.str_ref()); }},
  };
  return t;
}

}  // namespace

bool is_known_test(const std::string& name) { return tests().count(name) != 0; }

bool apply_test(const std::string& name, const Value& value, const CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) fail("no test named '", name, "'");
  return it->second(value, args);
}

}  // namespace triattn::jinja
