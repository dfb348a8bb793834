// Jinja filters (`value | name(args)`), with transformers' tojson in place of Jinja's.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "chat/jinja_args.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_json.h"
#include "chat/jinja_pystr.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

using FilterFn = Value (*)(Budget&, const Value&, const CallArgs&);

// `attribute="a.b.0"` as map()/selectattr()/sort() read it.
Value attr_path(Budget& budget, const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (true) {
    size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = digits ? get_item(budget, cur, Value::integer(std::stoll(part))) : get_item(budget, cur, Value(part));
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

// The text a string filter works on: str(v). Printing a container builds a new string,
// charged here (a string input was charged when the filter read it).
std::string text_of(Budget& budget, const Value& v) {
  if (v.is_undefined()) return "";
  std::string text = v.to_str();
  if (!v.is_string()) budget.bytes(text.size());
  return text;
}

Value f_length(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "length", {});
  switch (v.kind()) {
    case Value::Kind::Undefined: return Value::integer(0);
    case Value::Kind::String: return Value::integer(static_cast<int64_t>(pystr::length(v.str_ref())));
    case Value::Kind::List: return Value::integer(static_cast<int64_t>(v.list_ref().size()));
    case Value::Kind::Dict: return Value::integer(static_cast<int64_t>(v.dict_ref().items.size()));
    default: fail("object of type '", v.type_name(), "' has no len()");
  }
}

Value f_tojson(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = r.flag(0, false);
  Value ind = r.get(1);
  if (ind.is_int()) {
    size_t width = static_cast<size_t>(std::max<int64_t>(0, ind.as_int()));
    check_string_size(width);
    o.indent = std::string(width, ' ');
  }
  else if (ind.is_string()) o.indent = ind.str_ref();
  else if (!ind.is_undefined() && !ind.is_none()) fail("tojson(): indent must be an integer or a string");
  Value seps = r.get(2);
  if (seps.is_list()) {
    if (seps.list_ref().size() != 2 || !seps.list_ref()[0].is_string() || !seps.list_ref()[1].is_string())
      fail("tojson(): separators must be a pair of strings");
    o.item_sep = seps.list_ref()[0].str_ref();
    o.key_sep = seps.list_ref()[1].str_ref();
  }
  o.sort_keys = r.flag(3, false);
  return Value(json_dumps(v, o));
}

Value f_default(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "default", {"default_value", "boolean"});
  bool use_default = r.flag(1, false) ? !v.truthy() : v.is_undefined();
  if (!use_default) return v;
  return r.has(0) ? r.get(0) : Value(std::string());
}

Value f_trim(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "trim", {"chars"});
  std::optional<std::string> chars;
  if (r.has(0) && !r.get(0).is_none()) chars = r.str(0, "");
  return Value(pystr::strip(text_of(budget, v), chars, true, true));
}

Value f_join(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "join", {"d", "attribute"});
  std::string sep = r.str(0, "");
  CappedString out;
  bool first = true;
  Value items = iterate(v);
  for (const Value& e : items.list_ref()) {
    budget.step();
    if (!first) out.append(sep);
    first = false;
    Value x = r.has(1) ? attr_path(budget, e, r.str(1, "")) : e;
    if (x.is_string()) out.append(x.str_ref());
    else out.append(x.to_str());
  }
  return Value(out.take());
}

Value f_first(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "first", {});
  Value items = iterate(v);
  return items.list_ref().empty() ? Value::undefined("No first item, sequence was empty.") : items.list_ref().front();
}

Value f_last(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "last", {});
  Value items = iterate(v);
  return items.list_ref().empty() ? Value::undefined("No last item, sequence was empty.") : items.list_ref().back();
}

Value f_list(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "list", {});
  Value items = iterate(v);
  return items.is_tuple() ? Value::list(items.list_ref()) : items;
}

Value f_items(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "items", {});
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict() && !v.is_namespace()) fail("items filter: can only get item pairs from a mapping, not ", v.type_name());
  const ValueDict& d = v.is_dict() ? v.dict_ref() : v.namespace_ref();
  ValueList out;
  for (const auto& [k, val] : d.items) {
    budget.step();
    out.push_back(Value::tuple({Value(k), val}));
  }
  return Value::list(std::move(out));
}

Value f_string(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "string", {});
  return Value(v.to_str());
}

Value f_int(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "int", {"default", "base"});
  Value dflt = r.has(0) ? r.get(0) : Value::integer(0);
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  if (v.is_float()) return std::isfinite(v.as_float()) ? Value::integer(static_cast<int64_t>(v.as_float())) : dflt;
  if (v.is_string()) {
    std::string s = pystr::strip(v.str_ref(), std::nullopt, true, true);
    int base = static_cast<int>(r.integer(1, 10));
    try {
      size_t used = 0;
      long long x = std::stoll(s, &used, base);
      if (used == s.size()) return Value::integer(x);
      double d = std::stod(s, &used);  // Jinja falls back to int(float(s))
      if (used == s.size() && std::isfinite(d)) return Value::integer(static_cast<int64_t>(d));
    } catch (const std::exception&) {
    }
  }
  return dflt;
}

Value f_float(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "float", {"default"});
  Value dflt = r.has(0) ? r.get(0) : Value::number(0.0);
  if (v.is_number()) return Value::number(v.as_float());
  if (v.is_string()) {
    try {
      std::string s = pystr::strip(v.str_ref(), std::nullopt, true, true);
      size_t used = 0;
      double d = std::stod(s, &used);
      if (used == s.size()) return Value::number(d);
    } catch (const std::exception&) {
    }
  }
  return dflt;
}

Value f_upper(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "upper", {});
  return Value(pystr::upper(text_of(budget, v)));
}
Value f_lower(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "lower", {});
  return Value(pystr::lower(text_of(budget, v)));
}
Value f_capitalize(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "capitalize", {});
  return Value(pystr::capitalize(text_of(budget, v)));
}
Value f_title(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "title", {});
  return Value(pystr::title(text_of(budget, v)));
}

Value f_replace(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "replace", {"old", "new", "count"});
  return Value(replace_checked(text_of(budget, v), r.str(0, ""), r.str(1, ""), r.integer(2, -1)));
}

Value f_safe(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "safe", {});
  return v;
}

Value f_escape(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "escape", {});
  CappedString out;
  for (char c : text_of(budget, v)) {
    switch (c) {
      case '&': out.append("&amp;"); break;
      case '<': out.append("&lt;"); break;
      case '>': out.append("&gt;"); break;
      case '"': out.append("&#34;"); break;
      case '\'': out.append("&#39;"); break;
      default: out.push_back(c);
    }
  }
  return Value(out.take());
}

Value f_reverse(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "reverse", {});
  if (v.is_string()) {
    std::u32string u = pystr::decode(v.str_ref());
    std::reverse(u.begin(), u.end());
    return Value(pystr::encode(u));
  }
  ValueList items = iterate(v).list_ref();
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_abs(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "abs", {});
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == std::numeric_limits<int64_t>::min()) fail("integer overflow (results must fit in 64 bits)");
    return Value::integer(std::llabs(v.as_int()));
  }
  if (v.is_float()) return Value::number(std::fabs(v.as_float()));
  fail("bad operand type for abs(): '", v.type_name(), "'");
}

Value f_round(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "round", {"precision", "method"});
  if (!v.is_number()) fail("round filter needs a number, not ", v.type_name());
  double scale = std::pow(10.0, static_cast<double>(r.integer(0, 0)));
  std::string method = r.str(1, "common");
  double x = v.as_float() * scale;
  if (method == "common") x = std::round(x);
  else if (method == "ceil") x = std::ceil(x);
  else if (method == "floor") x = std::floor(x);
  else fail("round filter: method must be common, ceil or floor");
  return Value::number(x / scale);
}

// select / reject / selectattr / rejectattr share one implementation.
Value select_impl(Budget& budget, const Value& v, const CallArgs& a, bool by_attr, bool keep_when, const char* fn) {
  CallArgs rest;
  size_t first_test_arg = by_attr ? 1 : 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty() || !a.pos[0].is_string()) fail(fn, "(): needs an attribute name");
    attr = a.pos[0].str_ref();
  }
  std::string test;
  if (a.pos.size() > first_test_arg) {
    if (!a.pos[first_test_arg].is_string()) fail(fn, "(): the test name must be a string");
    test = a.pos[first_test_arg].str_ref();
    rest.pos.assign(a.pos.begin() + static_cast<long>(first_test_arg) + 1, a.pos.end());
    rest.kw = a.kw;
  }
  ValueList out;
  Value items = iterate(v);
  for (const Value& e : items.list_ref()) {
    budget.step();
    Value subject = by_attr ? attr_path(budget, e, attr) : e;
    bool pass = test.empty() ? subject.truthy() : apply_test(budget, test, subject, rest);
    if (pass == keep_when) out.push_back(e);
  }
  return Value::list(std::move(out));
}
Value f_select(Budget& budget, const Value& v, const CallArgs& a) {
  return select_impl(budget, v, a, false, true, "select");
}
Value f_reject(Budget& budget, const Value& v, const CallArgs& a) {
  return select_impl(budget, v, a, false, false, "reject");
}
Value f_selectattr(Budget& budget, const Value& v, const CallArgs& a) {
  return select_impl(budget, v, a, true, true, "selectattr");
}
Value f_rejectattr(Budget& budget, const Value& v, const CallArgs& a) {
  return select_impl(budget, v, a, true, false, "rejectattr");
}

Value f_map(Budget& budget, const Value& v, const CallArgs& a) {
  ValueList out;
  for (const auto& [k, val] : a.kw)
    if (k != "attribute" && k != "default") fail("map(): unexpected keyword argument '", k, "'");
  const Value* attribute = nullptr;
  const Value* dflt = nullptr;
  for (const auto& [k, val] : a.kw) (k == "attribute" ? attribute : dflt) = &val;
  if (attribute) {
    if (!attribute->is_string()) fail("map(): attribute must be a string");
    Value items = iterate(v);
    for (const Value& e : items.list_ref()) {
      budget.step();
      Value x = attr_path(budget, e, attribute->str_ref());
      out.push_back(x.is_undefined() && dflt ? *dflt : x);
    }
    return Value::list(std::move(out));
  }
  if (a.pos.empty() || !a.pos[0].is_string()) fail("map(): needs a filter name or attribute=");
  std::string filter = a.pos[0].str_ref();
  if (!is_known_filter(filter)) fail("map(): no filter named '", filter, "'");
  CallArgs rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  Value items = iterate(v);
  for (const Value& e : items.list_ref()) {
    budget.step();
    out.push_back(apply_filter(budget, filter, e, rest));
  }
  return Value::list(std::move(out));
}

Value sort_key(Budget& budget, const Value& e, const std::string& attr, bool case_sensitive) {
  Value k = attr.empty() ? e : attr_path(budget, e, attr);
  if (!case_sensitive && k.is_string()) {
    budget.read(k);
    return Value(pystr::lower(k.str_ref()));
  }
  return k;
}

Value f_sort(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "sort", {"reverse", "case_sensitive", "attribute"});
  bool rev = r.flag(0, false), cs = r.flag(1, false);
  std::string attr = r.str(2, "");
  ValueList items = iterate(v).list_ref();
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    Value kx = sort_key(budget, x, attr, cs), ky = sort_key(budget, y, attr, cs);
    return rev ? compare_op(budget, "<", ky, kx) : compare_op(budget, "<", kx, ky);
  });
  return Value::list(std::move(items));
}

Value f_dictsort(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "dictsort", {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) fail("dictsort filter needs a mapping, not ", v.type_name());
  bool cs = r.flag(0, false), rev = r.flag(2, false);
  std::string by = r.str(1, "key");
  if (by != "key" && by != "value") fail("dictsort(): by must be 'key' or 'value'");
  ValueList pairs;
  for (const auto& [k, val] : v.dict_ref().items) pairs.push_back(Value::tuple({Value(k), val}));
  size_t idx = by == "key" ? 0 : 1;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    Value kx = sort_key(budget, x.list_ref()[idx], "", cs), ky = sort_key(budget, y.list_ref()[idx], "", cs);
    return rev ? compare_op(budget, "<", ky, kx) : compare_op(budget, "<", kx, ky);
  });
  return Value::list(std::move(pairs));
}

Value f_unique(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "unique", {"case_sensitive", "attribute"});
  bool cs = r.flag(0, false);
  std::string attr = r.str(1, "");
  ValueList out, seen;
  Value items = iterate(v);
  for (const Value& e : items.list_ref()) {
    Value k = sort_key(budget, e, attr, cs);
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(k, budget); })) {
      seen.push_back(k);
      out.push_back(e);
    }
  }
  return Value::list(std::move(out));
}

Value minmax(Budget& budget, const Value& v, const CallArgs& a, bool want_max, const char* fn) {
  ArgReader r(a, fn, {"case_sensitive", "attribute"});
  bool cs = r.flag(0, false);
  std::string attr = r.str(1, "");
  Value seq = iterate(v);
  const ValueList& items = seq.list_ref();
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    Value ki = sort_key(budget, items[i], attr, cs), kb = sort_key(budget, items[best], attr, cs);
    if (want_max ? compare_op(budget, ">", ki, kb) : compare_op(budget, "<", ki, kb)) best = i;
  }
  return items[best];
}
Value f_max(Budget& budget, const Value& v, const CallArgs& a) { return minmax(budget, v, a, true, "max"); }
Value f_min(Budget& budget, const Value& v, const CallArgs& a) { return minmax(budget, v, a, false, "min"); }

Value f_sum(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "sum", {"attribute", "start"});
  Value total = r.has(1) ? r.get(1) : Value::integer(0);
  std::string attr = r.str(0, "");
  Value items = iterate(v);
  for (const Value& e : items.list_ref())
    total = binary_op(budget, "+", total, attr.empty() ? e : attr_path(budget, e, attr));
  return total;
}

Value f_attr(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "attr", {"name"});
  return get_attr(budget, v, r.str(0, ""));
}

Value f_indent(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader r(a, "indent", {"width", "first", "blank"});
  Value w = r.get(0);
  size_t width = w.is_string() ? 0 : static_cast<size_t>(std::max<int64_t>(0, r.integer(0, 4)));
  check_string_size(width);
  std::string pad = w.is_string() ? w.str_ref() : std::string(width, ' ');
  bool first = r.flag(1, false), blank = r.flag(2, false);
  std::vector<std::string> lines = split_capped(text_of(budget, v), "\n");
  CappedString out;
  for (size_t i = 0; i < lines.size(); ++i) {
    budget.step();
    if (i) out.append("\n");
    bool indent_it = i == 0 ? first : (blank || !pystr::strip(lines[i], std::nullopt, true, true).empty());
    if (indent_it) out.append(pad);
    out.append(lines[i]);
  }
  return Value(out.take());
}

Value f_wordcount(Budget& budget, const Value& v, const CallArgs& a) {
  ArgReader(a, "wordcount", {});
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : pystr::decode(text_of(budget, v))) {
    bool space = pystr::is_space(c);
    words += !space && !in_word;
    in_word = !space;
  }
  return Value::integer(words);
}

// printf-style `"%s and %d" | format(a, b)`, enough for %s %d %i %r %%.
Value f_format(Budget& budget, const Value& v, const CallArgs& a) {
  if (!v.is_string()) fail("format filter needs a string, not ", v.type_name());
  const std::string& f = v.str_ref();
  CappedString out;
  size_t next_arg = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.push_back(f[i]);
      continue;
    }
    if (i + 1 >= f.size()) fail("format filter: incomplete format");
    char c = f[++i];
    if (c == '%') {
      out.push_back('%');
      continue;
    }
    if (next_arg >= a.pos.size()) fail("format filter: not enough arguments for format string");
    const Value& arg = a.pos[next_arg++];
    if (c == 's') out.append(arg.to_str());
    else if (c == 'r') out.append(arg.repr());
    else if (c == 'd' || c == 'i') {
      if (!arg.is_number()) fail("format filter: %d needs a number");
      out.append(std::to_string(arg.is_float() ? static_cast<int64_t>(arg.as_float()) : arg.as_int()));
    } else fail("format filter: unsupported conversion '%", c, "'");
  }
  return Value(out.take());
}

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> f = {
      {"abs", f_abs},           {"attr", f_attr},       {"capitalize", f_capitalize}, {"count", f_length},
      {"d", f_default},         {"default", f_default}, {"dictsort", f_dictsort},     {"e", f_escape},
      {"escape", f_escape},     {"first", f_first},     {"float", f_float},           {"format", f_format},
      {"indent", f_indent},     {"int", f_int},         {"items", f_items},           {"join", f_join},
      {"last", f_last},         {"length", f_length},   {"list", f_list},             {"lower", f_lower},
      {"map", f_map},           {"max", f_max},         {"min", f_min},               {"reject", f_reject},
      {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse},   {"round", f_round},
      {"safe", f_safe},         {"select", f_select},   {"selectattr", f_selectattr}, {"sort", f_sort},
      {"string", f_string},     {"sum", f_sum},         {"title", f_title},           {"tojson", f_tojson},
      {"trim", f_trim},         {"unique", f_unique},   {"upper", f_upper},           {"wordcount", f_wordcount},
  };
  return f;
}

}  // namespace

bool is_known_filter(const std::string& name) { return filters().count(name) != 0; }

Value apply_filter(Budget& budget, const std::string& name, const Value& value, const CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) fail("no filter named '", name, "'");
  budget.read(value);
  Value result = it->second(budget, value, args);
  budget.built(result);
  return result;
}

}  // namespace triattn::jinja
