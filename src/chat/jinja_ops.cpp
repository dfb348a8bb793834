// Python semantics of operators, item/attribute access, slicing and iteration.
#include <cmath>
#include <cstdlib>
#include <optional>

#include "chat/jinja_budget.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_pystr.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

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

// `seq * n`; the size of the result is checked before it is built. An empty sequence is
// returned at once: its size check passes for any n, and a loop of n empty appends
// (`'' * 20**12`) would never end (found by fuzz_jinja).
Value repeat(const Value& seq, int64_t n) {
  const bool empty = seq.is_string() ? seq.str_ref().empty() : seq.list_ref().empty();
  if (n <= 0 || empty) return seq.is_string() ? Value(std::string()) : Value::list({});
  const size_t times = static_cast<size_t>(n);
  if (seq.is_string()) {
    const std::string& s = seq.str_ref();
    check_string_size(saturating_mul(s.size(), times));
    std::string out;
    out.reserve(s.size() * times);
    for (size_t i = 0; i < times; ++i) out += s;
    return Value(std::move(out));
  }
  const ValueList& l = seq.list_ref();
  check_list_size(saturating_mul(l.size(), times));
  ValueList out;
  out.reserve(l.size() * times);
  for (size_t i = 0; i < times; ++i) out.insert(out.end(), l.begin(), l.end());
  return Value::list(std::move(out));
}

// d[key] for the interpreter: a linear scan, charged by its length (dicts are small, but
// one from a request may not be).
const Value* find_key(Budget& budget, const ValueDict& d, std::string_view key) {
  budget.step(static_cast<int64_t>(d.items.size() / 16));
  return d.find(key);
}

// Python's normalisation of an index into [0, n); false when out of range.
bool norm_index(int64_t& i, size_t n) {
  if (i < 0) i += static_cast<int64_t>(n);
  return i >= 0 && i < static_cast<int64_t>(n);
}

int three_way(Budget& budget, const std::string& op, const Value& a, const Value& b) {
  budget.step();
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_float(), y = b.as_float();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    budget.bytes(std::min(a.str_ref().size(), b.str_ref().size()));
    int c = a.str_ref().compare(b.str_ref());  // UTF-8 byte order == code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const ValueList &x = a.list_ref(), &y = b.list_ref();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].equals(y[i], budget)) continue;
      return three_way(budget, op, x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  fail("'", op, "' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
}

// The text `~` joins: a string itself (no copy), else its str() in `tmp`.
const std::string& operand_text(const Value& v, std::string& tmp) {
  if (v.is_string()) return v.str_ref();
  tmp = v.to_str();
  return tmp;
}

// `r` is taken by reference so that it is read after __builtin_*_overflow, the other
// argument, has written it (argument evaluation order is unspecified).
Value checked_int(bool overflowed, const int64_t& r) {
  if (overflowed) fail("integer overflow (results must fit in 64 bits)");
  return Value::integer(r);
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string ta, tb;
    const std::string& x = operand_text(a, ta);
    const std::string& y = operand_text(b, tb);
    check_string_size(x.size() + y.size());
    return Value(x + y);
  }
  check_defined(a, b);
  bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  bool nums = a.is_number() && b.is_number();
  int64_t r = 0;
  if (op == "+") {
    if (ints) return checked_int(__builtin_add_overflow(a.as_int(), b.as_int(), &r), r);
    if (nums) return Value::number(a.as_float() + b.as_float());
    if (a.is_string() && b.is_string()) {
      check_string_size(a.str_ref().size() + b.str_ref().size());
      return Value(a.str_ref() + b.str_ref());
    }
    if (a.is_list() && b.is_list()) {
      check_list_size(a.list_ref().size() + b.list_ref().size());
      ValueList out;
      out.reserve(a.list_ref().size() + b.list_ref().size());
      out.insert(out.end(), a.list_ref().begin(), a.list_ref().end());
      out.insert(out.end(), b.list_ref().begin(), b.list_ref().end());
      if (a.is_tuple() != b.is_tuple()) bad_operands(op, a, b);
      return a.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    bad_operands(op, a, b);
  }
  if (op == "-") {
    if (ints) return checked_int(__builtin_sub_overflow(a.as_int(), b.as_int(), &r), r);
    if (nums) return Value::number(a.as_float() - b.as_float());
    bad_operands(op, a, b);
  }
  if (op == "*") {
    if (ints) return checked_int(__builtin_mul_overflow(a.as_int(), b.as_int(), &r), r);
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
      if (y == -1) return op == "%" ? Value::integer(0) : checked_int(__builtin_sub_overflow(0, x, &r), r);
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
      // Any base but 0, 1 and -1 overflows within 63 multiplications, so the loop is short.
      int64_t base = a.as_int(), e = b.as_int();
      if (base == 0 || base == 1) return Value::integer(e == 0 ? 1 : base);
      if (base == -1) return Value::integer(e % 2 == 0 ? 1 : -1);
      int64_t p = 1;
      for (; e > 0; --e)
        if (__builtin_mul_overflow(p, base, &p)) fail("integer power overflows");
      return Value::integer(p);
    }
    return Value::number(std::pow(a.as_float(), b.as_float()));
  }
  fail("unknown operator '", op, "'");
}

}  // namespace

Value binary_op(Budget& budget, const std::string& op, const Value& a, const Value& b) {
  Value r = arithmetic(op, a, b);
  budget.built(r);
  return r;
}

bool compare_op(Budget& budget, const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return a.equals(b, budget);
  if (op == "!=") return !a.equals(b, budget);
  if (op == "in" || op == "notin") {
    bool found = false;
    if (b.is_undefined()) {
      found = false;  // iterating an undefined value yields nothing
    } else if (b.is_string()) {
      if (!a.is_string()) fail("'in <string>' requires string as left operand, not ", a.type_name());
      budget.read(b);
      found = b.str_ref().find(a.str_ref()) != std::string::npos;
    } else if (b.is_list()) {
      for (const Value& e : b.list_ref())
        if (e.equals(a, budget)) { found = true; break; }
    } else if (b.is_dict()) {
      found = a.is_string() && find_key(budget, b.dict_ref(), a.str_ref()) != nullptr;
    } else if (b.is_namespace()) {
      found = a.is_string() && find_key(budget, b.namespace_ref(), a.str_ref()) != nullptr;
    } else {
      fail("argument of type '", b.type_name(), "' is not iterable");
    }
    return op == "in" ? found : !found;
  }
  check_defined(a, b);
  int c = three_way(budget, op, a, b);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  if (op == ">=") return c >= 0;
  fail("unknown comparison '", op, "'");
}

Value get_attr(Budget& budget, const Value& obj, const std::string& name) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_dict()) {
    if (const Value* v = find_key(budget, obj.dict_ref(), name)) return *v;
    return Value::undefined("'dict object' has no attribute '" + name + "'");
  }
  if (obj.is_namespace()) {
    if (const Value* v = find_key(budget, obj.namespace_ref(), name)) return *v;
    return Value::undefined("'namespace' object has no attribute '" + name + "'");
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + name + "'");
}

Value get_item(Budget& budget, const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  if (key.is_int() || key.is_bool()) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      if (!norm_index(i, obj.list_ref().size()))
        return Value::undefined("list object has no element " + std::to_string(key.as_int()));
      return obj.list_ref()[static_cast<size_t>(i)];
    }
    if (obj.is_string()) {
      budget.read(obj);
      std::u32string u = pystr::decode(obj.str_ref());
      if (!norm_index(i, u.size())) return Value::undefined("string index out of range");
      return Value(pystr::encode(std::u32string(1, u[static_cast<size_t>(i)])));
    }
  }
  if (key.is_string()) return get_attr(budget, obj, key.str_ref());
  Value missing = Value::undefined("'" + obj.type_name() + " object' has no element " + key.repr());
  budget.built(missing);
  return missing;
}

Value slice(Budget& budget, const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (obj.is_undefined()) undefined_error(obj);
  budget.read(obj);
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
  // How many indices b, b+step, ... lie before e; computed unsigned, as b - e and the step
  // can be anywhere in int64 (step may be -2^63).
  uint64_t count = 0;
  if (step > 0 && b < e) count = (static_cast<uint64_t>(e - b) - 1) / static_cast<uint64_t>(step) + 1;
  if (step < 0 && b > e) count = (static_cast<uint64_t>(b - e) - 1) / (0 - static_cast<uint64_t>(step)) + 1;
  auto index = [&](uint64_t k) { return static_cast<size_t>(b + static_cast<int64_t>(k) * step); };
  Value result;
  if (obj.is_list()) {
    ValueList out;
    out.reserve(count);
    for (uint64_t k = 0; k < count; ++k) out.push_back(obj.list_ref()[index(k)]);
    result = obj.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  } else {
    std::u32string out;
    out.reserve(count);
    for (uint64_t k = 0; k < count; ++k) out.push_back(chars[index(k)]);
    result = Value(pystr::encode(out));
  }
  budget.built(result);
  return result;
}

Value iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return Value::list({});
    case Value::Kind::List: return v;
    case Value::Kind::Dict: {
      ValueList keys;
      keys.reserve(v.dict_ref().items.size());
      for (const auto& kv : v.dict_ref().items) keys.emplace_back(kv.first);
      return Value::list(std::move(keys));
    }
    case Value::Kind::String: {
      check_list_size(pystr::length(v.str_ref()));
      ValueList out;
      for (char32_t c : pystr::decode(v.str_ref())) out.emplace_back(pystr::encode(std::u32string(1, c)));
      return Value::list(std::move(out));
    }
    default: fail("'", v.type_name(), "' object is not iterable");
  }
}

}  // namespace triattn::jinja
