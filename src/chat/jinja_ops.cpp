// Python semantics of operators, item/attribute access, slicing and iteration.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "chat/jinja_builtins.h"
#include "chat/jinja_pystr.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

// Results larger than this are a template bug (or an attack), not a prompt.
constexpr size_t kMaxRepeatBytes = size_t{1} << 28;

[[noreturn]] void undefined_error(const Value& v) {
  fail(v.undefined_hint().empty() ? std::string("undefined value used") : v.undefined_hint());
}

void check_defined(const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
}

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value repeat(const Value& seq, int64_t n) {
  if (n <= 0) return seq.is_string() ? Value(std::string()) : Value::list({});
  if (seq.is_string()) {
    if (seq.str_ref().size() * static_cast<size_t>(n) > kMaxRepeatBytes) fail("string repetition too large");
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.str_ref();
    return Value(std::move(out));
  }
  if (seq.list_ref().size() * static_cast<size_t>(n) > kMaxRepeatBytes / 16) fail("list repetition too large");
  ValueList out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list_ref().begin(), seq.list_ref().end());
  return Value::list(std::move(out));
}

// Python's normalisation of an index into [0, n); false when out of range.
bool norm_index(int64_t& i, size_t n) {
  if (i < 0) i += static_cast<int64_t>(n);
  return i >= 0 && i < static_cast<int64_t>(n);
}

int three_way(const std::string& op, const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_float(), y = b.as_float();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    int c = a.str_ref().compare(b.str_ref());  // UTF-8 byte order == code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const ValueList &x = a.list_ref(), &y = b.list_ref();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].equals(y[i])) continue;
      return three_way(op, x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  fail("'", op, "' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
}

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value(a.to_str() + b.to_str());
  check_defined(a, b);
  bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  bool nums = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) return Value::integer(a.as_int() + b.as_int());
    if (nums) return Value::number(a.as_float() + b.as_float());
    if (a.is_string() && b.is_string()) return Value(a.str_ref() + b.str_ref());
    if (a.is_list() && b.is_list()) {
      ValueList out = a.list_ref();
      out.insert(out.end(), b.list_ref().begin(), b.list_ref().end());
      if (a.is_tuple() != b.is_tuple()) bad_operands(op, a, b);
      return a.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    bad_operands(op, a, b);
  }
  if (op == "-") {
    if (ints) return Value::integer(a.as_int() - b.as_int());
    if (nums) return Value::number(a.as_float() - b.as_float());
    bad_operands(op, a, b);
  }
  if (op == "*") {
    if (ints) return Value::integer(a.as_int() * b.as_int());
    if (nums) return Value::number(a.as_float() * b.as_float());
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
    bad_operands(op, a, b);
  }
  if (op == "/") {
    if (!nums) bad_operands(op, a, b);
    if (b.as_float() == 0.0) fail("division by zero");
    return Value::number(a.as_float() / b.as_float());
  }
  if (op == "//" || op == "%") {
    if (!nums) bad_operands(op, a, b);
    if (b.as_float() == 0.0) fail(op == "%" ? "modulo by zero" : "integer division by zero");
    if (ints) {
      int64_t x = a.as_int(), y = b.as_int();
      int64_t q = floor_div(x, y);
      return Value::integer(op == "//" ? q : x - q * y);
    }
    double x = a.as_float(), y = b.as_float();
    double q = std::floor(x / y);
    return Value::number(op == "//" ? q : x - q * y);
  }
  if (op == "**") {
    if (!nums) bad_operands(op, a, b);
    if (ints && b.as_int() >= 0) {
      int64_t r = 1, base = a.as_int();
      for (int64_t e = b.as_int(); e > 0; --e) {
        if (r != 0 && std::abs(r) > std::numeric_limits<int64_t>::max() / std::max<int64_t>(1, std::abs(base)))
          fail("integer power overflows");
        r *= base;
      }
      return Value::integer(r);
    }
    return Value::number(std::pow(a.as_float(), b.as_float()));
  }
  fail("unknown operator '", op, "'");
}

bool compare_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return a.equals(b);
  if (op == "!=") return !a.equals(b);
  if (op == "in" || op == "notin") {
    bool found = false;
    if (b.is_undefined()) {
      found = false;  // iterating an undefined value yields nothing
    } else if (b.is_string()) {
      if (!a.is_string()) fail("'in <string>' requires string as left operand, not ", a.type_name());
      found = b.str_ref().find(a.str_ref()) != std::string::npos;
    } else if (b.is_list()) {
      for (const Value& e : b.list_ref())
        if (e.equals(a)) { found = true; break; }
    } else if (b.is_dict()) {
      found = a.is_string() && b.dict_ref().find(a.str_ref()) != nullptr;
    } else if (b.is_namespace()) {
      found = a.is_string() && b.namespace_ref().find(a.str_ref()) != nullptr;
    } else {
      fail("argument of type '", b.type_name(), "' is not iterable");
    }
    return op == "in" ? found : !found;
  }
  check_defined(a, b);
  int c = three_way(op, a, b);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  if (op == ">=") return c >= 0;
  fail("unknown comparison '", op, "'");
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict_ref().find(name)) return *v;
    return Value::undefined("'dict object' has no attribute '" + name + "'");
  }
  if (obj.is_namespace()) {
    if (const Value* v = obj.namespace_ref().find(name)) return *v;
    return Value::undefined("'namespace' object has no attribute '" + name + "'");
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  if (key.is_int() || key.is_bool()) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      if (!norm_index(i, obj.list_ref().size()))
        return Value::undefined("list object has no element " + std::to_string(key.as_int()));
      return obj.list_ref()[static_cast<size_t>(i)];
    }
    if (obj.is_string()) {
      std::u32string u = pystr::decode(obj.str_ref());
      if (!norm_index(i, u.size())) return Value::undefined("string index out of range");
      return Value(pystr::encode(std::u32string(1, u[static_cast<size_t>(i)])));
    }
  }
  if (key.is_string()) return get_attr(obj, key.str_ref());
  return Value::undefined("'" + obj.type_name() + " object' has no element " + key.repr());
}

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (obj.is_undefined()) undefined_error(obj);
  auto opt_int = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) fail("slice ", what, " must be an integer or none, not ", v.type_name());
    return v.as_int();
  };
  std::optional<int64_t> start = opt_int(start_v, "start"), stop = opt_int(stop_v, "stop"),
                         step_o = opt_int(step_v, "step");
  int64_t step = step_o.value_or(1);
  if (step == 0) fail("slice step cannot be zero");

  std::u32string chars;
  size_t n;
  if (obj.is_list()) {
    n = obj.list_ref().size();
  } else if (obj.is_string()) {
    chars = pystr::decode(obj.str_ref());
    n = chars.size();
  } else {
    fail("'", obj.type_name(), "' object is not subscriptable");
  }
  // Python's slice.indices().
  const int64_t len = static_cast<int64_t>(n);
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= len) {
      x = step < 0 ? len - 1 : len;
    }
    return x;
  };
  int64_t b = clamp(start, step < 0 ? len - 1 : 0);
  int64_t e = clamp(stop, step < 0 ? -1 : len);
  std::vector<size_t> idx;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) idx.push_back(static_cast<size_t>(i));
  if (obj.is_list()) {
    ValueList out;
    out.reserve(idx.size());
    for (size_t i : idx) out.push_back(obj.list_ref()[i]);
    return obj.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  std::u32string out;
  for (size_t i : idx) out.push_back(chars[i]);
  return Value(pystr::encode(out));
}

ValueList iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.list_ref();
    case Value::Kind::Dict: {
      ValueList keys;
      for (const auto& kv : v.dict_ref().items) keys.emplace_back(kv.first);
      return keys;
    }
    case Value::Kind::String: {
      ValueList out;
      for (char32_t c : pystr::decode(v.str_ref())) out.emplace_back(pystr::encode(std::u32string(1, c)));
      return out;
    }
    default: fail("'", v.type_name(), "' object is not iterable");
  }
}

}  // namespace triattn::jinja
