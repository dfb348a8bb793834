// Python methods templates call on str and dict values (`content.split('</think>')`,
// `tool.items()`). Mutating list/dict methods are refused, as in HF's immutable sandbox.
#include <algorithm>

#include "chat/jinja_args.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_pystr.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

std::optional<std::string> opt_str(const ArgReader& r, size_t i) {
  Value v = r.get(i);
  if (v.is_undefined() || v.is_none()) return std::nullopt;
  return r.str(i, "");
}

Value string_list(const std::vector<std::string>& parts) {
  ValueList out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.emplace_back(p);
  return Value::list(std::move(out));
}

// startswith/endswith accept one string or a tuple of them.
bool affix_match(const std::string& s, const Value& affix, bool prefix, const char* fn) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) fail("str.", fn, "(): argument must be str or a tuple of str, not ", a.type_name());
    const std::string& x = a.str_ref();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list()) {
    for (const Value& a : affix.list_ref())
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

// str.format with "{}", "{0}", "{name}" and "{{"/"}}"; format specs are not supported.
std::string py_format(const std::string& f, const CallArgs& a) {
  CappedString out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out.push_back('{');
      ++i;
    } else if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out.push_back('}');
      ++i;
    } else if (c == '{') {
      size_t close = f.find('}', i);
      if (close == std::string::npos) fail("str.format(): single '{' encountered in format string");
      std::string field = f.substr(i + 1, close - i - 1);
      if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
        fail("str.format(): format specs are not supported");
      const Value* v = nullptr;
      if (field.empty()) {
        if (auto_idx >= a.pos.size()) fail("str.format(): not enough positional arguments");
        v = &a.pos[auto_idx++];
      } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        size_t k = std::stoul(field);
        if (k >= a.pos.size()) fail("str.format(): positional index ", k, " out of range");
        v = &a.pos[k];
      } else {
        for (const auto& [name, val] : a.kw)
          if (name == field) v = &val;
        if (!v) fail("str.format(): no keyword argument '", field, "'");
      }
      out.append(v->to_str());
      i = close;
    } else if (c == '}') {
      fail("str.format(): single '}' encountered in format string");
    } else {
      out.push_back(c);
    }
  }
  return out.take();
}

bool string_method(Budget& budget, const std::string& s, const std::string& name, const CallArgs& a, Value& res) {
  const std::string fn = "str." + name;
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgReader r(a, fn, {"chars"});
    res = Value(pystr::strip(s, opt_str(r, 0), name != "rstrip", name != "lstrip"));
  } else if (name == "split" || name == "rsplit") {
    ArgReader r(a, fn, {"sep", "maxsplit"});
    res = string_list(split_capped(s, opt_str(r, 0), r.integer(1, -1), name == "rsplit"));
  } else if (name == "splitlines") {
    ArgReader r(a, fn, {});
    auto parts = split_capped(s, std::string("\n"));
    if (!parts.empty() && parts.back().empty()) parts.pop_back();
    res = string_list(parts);
  } else if (name == "startswith" || name == "endswith") {
    ArgReader r(a, fn, {"prefix"});
    res = Value::boolean(affix_match(s, r.get(0), name == "startswith", name.c_str()));
  } else if (name == "replace") {
    ArgReader r(a, fn, {"old", "new", "count"});
    res = Value(replace_checked(s, r.str(0, ""), r.str(1, ""), r.integer(2, -1)));
  } else if (name == "upper") {
    ArgReader(a, fn, {});
    res = Value(pystr::upper(s));
  } else if (name == "lower") {
    ArgReader(a, fn, {});
    res = Value(pystr::lower(s));
  } else if (name == "title") {
    ArgReader(a, fn, {});
    res = Value(pystr::title(s));
  } else if (name == "capitalize") {
    ArgReader(a, fn, {});
    res = Value(pystr::capitalize(s));
  } else if (name == "find") {
    ArgReader r(a, fn, {"sub"});
    res = Value::integer(pystr::find(s, r.str(0, "")));
  } else if (name == "count") {
    ArgReader r(a, fn, {"sub"});
    res = Value::integer(pystr::count(s, r.str(0, "")));
  } else if (name == "removeprefix" || name == "removesuffix") {
    ArgReader r(a, fn, {"affix"});
    std::string x = r.str(0, "");
    bool pre = name == "removeprefix";
    bool hit = x.size() <= s.size() &&
               (pre ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0);
    res = Value(hit ? (pre ? s.substr(x.size()) : s.substr(0, s.size() - x.size())) : s);
  } else if (name == "join") {
    ArgReader r(a, fn, {"iterable"});
    CappedString out;
    bool first = true;
    Value items = iterate(r.get(0));
    for (const Value& e : items.list_ref()) {
      budget.step();
      if (!e.is_string()) fail("str.join(): expected str items, found ", e.type_name());
      if (!first) out.append(s);
      first = false;
      out.append(e.str_ref());
    }
    res = Value(out.take());
  } else if (name == "format") {
    res = Value(py_format(s, a));
  } else if (name == "isspace" || name == "isdigit" || name == "isalpha" || name == "isalnum" ||
             name == "islower" || name == "isupper") {
    ArgReader(a, fn, {});
    std::u32string u = pystr::decode(s);
    bool ok = !u.empty();
    if (name == "islower" || name == "isupper") {
      ok = (name == "islower" ? pystr::lower(s) : pystr::upper(s)) == s &&
           pystr::lower(s) != pystr::upper(s);
    } else {
      for (char32_t c : u) {
        bool digit = c >= '0' && c <= '9';
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0x24F && c != 0xD7 && c != 0xF7);
        if (name == "isspace" ? !pystr::is_space(c) : name == "isdigit" ? !digit : name == "isalpha" ? !alpha : !(alpha || digit))
          ok = false;
      }
    }
    res = Value::boolean(ok);
  } else {
    return false;
  }
  return true;
}

bool dict_method(Budget& budget, const ValueDict& d, const std::string& name, const CallArgs& a, Value& res) {
  const std::string fn = "dict." + name;
  if (name == "items") {
    ArgReader(a, fn, {});
    ValueList out;
    for (const auto& [k, v] : d.items) out.push_back(Value::tuple({Value(k), v}));
    res = Value::list(std::move(out));
  } else if (name == "keys") {
    ArgReader(a, fn, {});
    ValueList out;
    for (const auto& kv : d.items) out.emplace_back(kv.first);
    res = Value::list(std::move(out));
  } else if (name == "values") {
    ArgReader(a, fn, {});
    ValueList out;
    for (const auto& kv : d.items) out.push_back(kv.second);
    res = Value::list(std::move(out));
  } else if (name == "get") {
    ArgReader r(a, fn, {"key", "default"});
    Value key = r.get(0);
    budget.step(static_cast<int64_t>(d.items.size() / 16));  // a linear scan, as get_attr charges
    const Value* v = key.is_string() ? d.find(key.str_ref()) : nullptr;
    res = v ? *v : (r.has(1) ? r.get(1) : Value::none());
  } else if (name == "copy") {
    ArgReader(a, fn, {});
    res = Value::dict(d);
  } else if (name == "update" || name == "pop" || name == "setdefault" || name == "clear" || name == "popitem") {
    fail("dict.", name, "(): the chat template environment is immutable");
  } else {
    return false;
  }
  return true;
}

bool call_method_unmetered(Budget& budget, const Value& obj, const std::string& name, const CallArgs& args,
                           Value& result) {
  if (obj.is_string()) return string_method(budget, obj.str_ref(), name, args, result);
  if (obj.is_dict()) return dict_method(budget, obj.dict_ref(), name, args, result);
  if (obj.is_list()) {
    if (name == "append" || name == "extend" || name == "pop" || name == "insert" || name == "remove" ||
        name == "clear" || name == "sort" || name == "reverse")
      fail("list.", name, "(): the chat template environment is immutable");
    if (name == "index" || name == "count") {
      ArgReader r(args, "list." + name, {"value"});
      Value x = r.get(0);
      int64_t n = 0;
      const ValueList& l = obj.list_ref();
      for (size_t i = 0; i < l.size(); ++i)
        if (l[i].equals(x, budget)) {
          if (name == "index") {
            result = Value::integer(static_cast<int64_t>(i));
            return true;
          }
          ++n;
        }
      if (name == "index") fail("list.index(): value is not in list");
      result = Value::integer(n);
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> split_capped(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit,
                                      bool from_right) {
  // At most kMaxListItems splits are made, so a string of a million separators is refused
  // before a million strings are built.
  const auto cap = static_cast<int64_t>(kMaxListItems);
  int64_t splits = maxsplit < 0 || maxsplit > cap ? cap : maxsplit;
  auto parts = from_right ? pystr::rsplit(s, sep, splits) : pystr::split(s, sep, splits);
  if (parts.size() > kMaxListItems) fail("str.split(): more than ", kMaxListItems, " parts (the limit for one list)");
  return parts;
}

std::string replace_checked(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  int64_t hits = pystr::count(s, from);
  if (count >= 0) hits = std::min(hits, count);
  const size_t n = static_cast<size_t>(hits);
  const size_t added = saturating_mul(n, to.size());
  const size_t kept = s.size() - (from.empty() ? 0 : n * from.size());
  check_string_size(added > kMaxStringBytes ? added : added + kept);
  return pystr::replace(s, from, to, count);
}

bool call_method(Budget& budget, const Value& obj, const std::string& name, const CallArgs& args, Value& result) {
  budget.read(obj);
  bool found = call_method_unmetered(budget, obj, name, args, result);
  if (found) budget.built(result);
  return found;
}

}  // namespace triattn::jinja
