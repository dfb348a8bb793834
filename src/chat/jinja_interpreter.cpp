// Walks the syntax tree and writes the output (the implementation behind jinja::Template). Scoping follows Jinja: each for-loop
// iteration and each macro call gets its own frame, so `set` inside them does not leak out
// (templates use namespace() for state that must survive a loop); `if` has no scope.
#include <new>
#include <stdexcept>
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_errors.h"
#include "chat/jinja_template.h"
#include "chat/jinja_parser.h"

namespace triattn::jinja {
namespace {

constexpr int kMaxCallDepth = 64;
constexpr int64_t kMaxRange = 1'000'000;

using Frame = std::unordered_map<std::string, Value>;
using Frames = std::vector<std::shared_ptr<Frame>>;

Value builtin_range(const CallArgs& a) {
  if (!a.kw.empty() || a.pos.empty() || a.pos.size() > 3) fail("range() takes 1 to 3 integer arguments");
  for (const Value& v : a.pos)
    if (!v.is_int() && !v.is_bool()) fail("range(): arguments must be integers, not ", v.type_name());
  int64_t start = 0, stop, step = 1;
  if (a.pos.size() == 1) {
    stop = a.pos[0].as_int();
  } else {
    start = a.pos[0].as_int();
    stop = a.pos[1].as_int();
    if (a.pos.size() == 3) step = a.pos[2].as_int();
  }
  if (step == 0) fail("range(): step must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(out.size()) >= kMaxRange) fail("range(): more than ", kMaxRange, " items");
    out.push_back(Value::integer(i));
  }
  return Value::list(std::move(out));
}

// namespace(dict?, key=value...) and dict(key=value...).
ValueDict kwargs_dict(const CallArgs& a, const char* fn) {
  ValueDict d;
  for (const Value& p : a.pos) {
    if (!p.is_dict()) fail(fn, "(): positional arguments must be mappings");
    for (const auto& [k, v] : p.dict_ref().items) d.set(k, v);
  }
  for (const auto& [k, v] : a.kw) d.set(k, v);
  return d;
}

class Interpreter {
 public:
  explicit Interpreter(const ValueDict& vars) {
    auto globals = std::make_shared<Frame>();
    (*globals)["range"] = Value::callable("range", builtin_range);
    (*globals)["namespace"] = Value::callable(
        "namespace", [](const CallArgs& a) { return Value::new_namespace(kwargs_dict(a, "namespace")); });
    (*globals)["dict"] = Value::callable("dict", [](const CallArgs& a) { return Value::dict(kwargs_dict(a, "dict")); });
    for (const auto& [k, v] : vars.items) (*globals)[k] = v;
    frames_.push_back(globals);
    frames_.push_back(std::make_shared<Frame>());  // template-level `set`s shadow the variables
  }

  // Macros capture the frames they were defined in, which hold the macro itself: clear
  // those frames so the cycle of shared pointers is freed.
  ~Interpreter() {
    for (auto& f : macro_frames_) f->clear();
  }

  std::string run(const Body& body) {
    std::string out;
    out_ = &out;
    exec_body(body);
    return out;
  }

 private:
  enum class Flow { Normal, Break, Continue };

  // Runs f, turning a plain Error into one that names the template line.
  template <class F>
  auto located(int line, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const TemplateRaised&) {
      throw;
    } catch (const LocatedError&) {
      throw;
    } catch (const Error& e) {
      throw LocatedError("chat template line " + std::to_string(line) + ": " + e.what());
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {  // e.g. std::out_of_range from a numeric conversion
      throw LocatedError("chat template line " + std::to_string(line) + ": " + e.what());
    }
  }

  Value lookup(const std::string& name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      auto f = (*it)->find(name);
      if (f != (*it)->end()) return f->second;
    }
    return Value::undefined("'" + name + "' is undefined");
  }

  void assign(const Target& t, const Value& v) {
    Frame& top = *frames_.back();
    if (!t.ns_attr.empty()) {
      Value ns = lookup(t.names[0]);
      if (!ns.is_namespace()) fail("cannot assign attribute on non-namespace object '", t.names[0], "'");
      ns.namespace_ref().set(t.ns_attr, v);
      return;
    }
    if (t.names.size() == 1) {
      top[t.names[0]] = v;
      return;
    }
    ValueList items = iterate(v);
    if (items.size() != t.names.size())
      fail(items.size() < t.names.size() ? "not enough" : "too many", " values to unpack (expected ",
           t.names.size(), ", got ", items.size(), ")");
    for (size_t i = 0; i < items.size(); ++i) top[t.names[i]] = items[i];
  }

  Flow exec_body(const Body& body) {
    for (const auto& s : body) {
      Flow f = exec(*s);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec(const Stmt& s) {
    switch (s.kind) {
      case Stmt::Kind::Text: *out_ += s.text; return Flow::Normal;
      case Stmt::Kind::Output: *out_ += eval(*s.expr).to_str(); return Flow::Normal;
      case Stmt::Kind::If:
        for (const auto& [cond, body] : s.branches)
          if (eval(*cond).truthy()) return exec_body(body);
        return exec_body(s.else_body);
      case Stmt::Kind::For: return exec_for(s);
      case Stmt::Kind::Set: {
        Value v = eval(*s.expr);
        located(s.line, [&] { assign(s.target, v); });
        return Flow::Normal;
      }
      case Stmt::Kind::SetBlock: {
        std::string captured;
        std::string* saved = out_;
        out_ = &captured;
        exec_body(s.body);
        out_ = saved;
        assign(s.target, Value(std::move(captured)));
        return Flow::Normal;
      }
      case Stmt::Kind::Macro: define_macro(s); return Flow::Normal;
      case Stmt::Kind::Break: return Flow::Break;
      case Stmt::Kind::Continue: return Flow::Continue;
      case Stmt::Kind::Sequence: return exec_body(s.body);
    }
    return Flow::Normal;
  }

  Flow exec_for(const Stmt& s) {
    Value iterable = eval(*s.expr);
    ValueList items = located(s.line, [&] { return iterate(iterable); });
    if (s.filter) {
      // `for x in xs if cond`: filtered before the loop, so loop.index/length count only
      // the items that pass.
      ValueList kept;
      for (const Value& item : items) {
        frames_.push_back(std::make_shared<Frame>());
        located(s.line, [&] { assign(s.target, item); });
        bool pass = eval(*s.filter).truthy();
        frames_.pop_back();
        if (pass) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec_body(s.else_body);
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      auto frame = std::make_shared<Frame>();
      ValueDict loop;
      loop.items = {{"index", Value::integer(i + 1)},      {"index0", Value::integer(i)},
                    {"revindex", Value::integer(n - i)},   {"revindex0", Value::integer(n - i - 1)},
                    {"first", Value::boolean(i == 0)},     {"last", Value::boolean(i == n - 1)},
                    {"length", Value::integer(n)},         {"depth", Value::integer(1)},
                    {"depth0", Value::integer(0)}};
      if (i > 0) loop.items.emplace_back("previtem", items[static_cast<size_t>(i - 1)]);
      if (i + 1 < n) loop.items.emplace_back("nextitem", items[static_cast<size_t>(i + 1)]);
      (*frame)["loop"] = Value::dict(std::move(loop));
      frames_.push_back(frame);
      located(s.line, [&] { assign(s.target, items[static_cast<size_t>(i)]); });
      Flow f;
      try {
        f = exec_body(s.body);
      } catch (...) {
        frames_.pop_back();
        throw;
      }
      frames_.pop_back();
      if (f == Flow::Break) break;
    }
    return Flow::Normal;
  }

  void define_macro(const Stmt& s) {
    Frames closure = frames_;
    const Stmt* def = &s;
    Interpreter* self = this;
    macro_frames_.push_back(frames_.back());
    (*frames_.back())[s.text] = Value::callable(s.text, [self, def, closure](const CallArgs& a) {
      return self->call_macro(*def, closure, a);
    });
  }

  Value call_macro(const Stmt& def, const Frames& closure, const CallArgs& a) {
    if (call_depth_ >= kMaxCallDepth) fail("macro '", def.text, "' recursed more than ", kMaxCallDepth, " levels");
    if (a.pos.size() > def.params.size())
      fail("macro '", def.text, "' takes ", def.params.size(), " arguments (", a.pos.size(), " given)");
    Frames saved_frames = std::move(frames_);
    std::string* saved_out = out_;
    std::string captured;
    frames_ = closure;
    frames_.push_back(std::make_shared<Frame>());
    out_ = &captured;
    ++call_depth_;
    try {
      for (const auto& [k, v] : a.kw) {
        bool known = false;
        for (const auto& p : def.params) known |= p.name == k;
        if (!known) fail("macro '", def.text, "' has no parameter '", k, "'");
      }
      for (size_t i = 0; i < def.params.size(); ++i) {
        const MacroParam& p = def.params[i];
        Value v;
        bool given = false;
        if (i < a.pos.size()) {
          v = a.pos[i];
          given = true;
        }
        for (const auto& [k, kv] : a.kw)
          if (k == p.name) {
            v = kv;
            given = true;
          }
        if (!given) v = p.default_value ? eval(*p.default_value) : Value::undefined("'" + p.name + "' is undefined");
        (*frames_.back())[p.name] = v;
      }
      exec_body(def.body);
    } catch (...) {
      --call_depth_;
      frames_ = std::move(saved_frames);
      out_ = saved_out;
      throw;
    }
    --call_depth_;
    frames_ = std::move(saved_frames);
    out_ = saved_out;
    return Value(std::move(captured));
  }

  CallArgs eval_args(const Expr& e, size_t first) {
    CallArgs a;
    for (size_t i = first; i < e.args.size(); ++i) a.pos.push_back(eval(*e.args[i]));
    for (const auto& [k, v] : e.kwargs) a.kw.emplace_back(k, eval(*v));
    return a;
  }

  Value eval(const Expr& e) {
    return located(e.line, [&] { return eval_unlocated(e); });
  }

  Value eval_unlocated(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Literal: return e.value;
      case Expr::Kind::Name: return lookup(e.name);
      case Expr::Kind::GetAttr: return get_attr(eval(*e.args[0]), e.name);
      case Expr::Kind::GetItem: return get_item(eval(*e.args[0]), eval(*e.args[1]));
      case Expr::Kind::Slice: {
        Value obj = eval(*e.args[0]);
        auto opt = [&](size_t i) { return e.args[i] ? eval(*e.args[i]) : Value::none(); };
        Value a = opt(1), b = opt(2), c = opt(3);
        return slice(obj, a, b, c);
      }
      case Expr::Kind::Call: return eval_call(e);
      case Expr::Kind::Filter: {
        Value v = eval(*e.args[0]);
        return apply_filter(e.name, v, eval_args(e, 1));
      }
      case Expr::Kind::Test: {
        Value v = eval(*e.args[0]);
        return Value::boolean(apply_test(e.name, v, eval_args(e, 1)) != e.negated);
      }
      case Expr::Kind::Unary: {
        Value v = eval(*e.args[0]);
        if (e.name == "not") return Value::boolean(!v.truthy());
        if (v.is_undefined()) fail(v.undefined_hint().empty() ? "undefined value used" : v.undefined_hint());
        if (!v.is_number()) fail("bad operand type for unary ", e.name, ": '", v.type_name(), "'");
        if (e.name == "+") return v.is_float() ? v : Value::integer(v.as_int());
        return v.is_float() ? Value::number(-v.as_float()) : Value::integer(-v.as_int());
      }
      case Expr::Kind::Binary: {
        Value l = eval(*e.args[0]);
        if (e.name == "and") return l.truthy() ? eval(*e.args[1]) : l;
        if (e.name == "or") return l.truthy() ? l : eval(*e.args[1]);
        return binary_op(e.name, l, eval(*e.args[1]));
      }
      case Expr::Kind::Compare: {
        Value left = eval(*e.args[0]);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1]);
          if (!compare_op(e.ops[i], left, right)) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case Expr::Kind::Cond:
        if (eval(*e.args[0]).truthy()) return eval(*e.args[1]);
        return e.args[2] ? eval(*e.args[2]) : Value::undefined("the condition of an inline if was false");
      case Expr::Kind::List: {
        ValueList items;
        for (const auto& a : e.args) items.push_back(eval(*a));
        return e.name == "tuple" ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      }
      case Expr::Kind::Dict: {
        ValueDict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value k = eval(*e.args[i]);
          if (!k.is_string()) fail("dict literal keys must be strings, not ", k.type_name());
          d.set(k.str_ref(), eval(*e.args[i + 1]));
        }
        return Value::dict(std::move(d));
      }
    }
    fail("unknown expression");
  }

  Value eval_call(const Expr& e) {
    const Expr& callee = *e.args[0];
    Value fn;
    if (callee.kind == Expr::Kind::GetAttr) {
      Value obj = eval(*callee.args[0]);
      CallArgs a = eval_args(e, 1);
      Value res;
      if (call_method(obj, callee.name, a, res)) return res;
      fn = get_attr(obj, callee.name);
      return invoke(fn, a);
    }
    fn = eval(callee);
    return invoke(fn, eval_args(e, 1));
  }

  Value invoke(const Value& fn, const CallArgs& a) {
    if (fn.is_undefined()) fail(fn.undefined_hint().empty() ? "call of an undefined value" : fn.undefined_hint());
    if (!fn.is_callable()) fail("'", fn.type_name(), "' object is not callable");
    return fn.callable_ref().fn(a);
  }

  Frames frames_;
  Frames macro_frames_;
  std::string* out_ = nullptr;
  int call_depth_ = 0;
};

}  // namespace

Template::Template(const std::string& source, const LexOptions& opt)
    : body_(std::make_shared<const Body>(parse(lex(source, opt)))) {}

std::string Template::render(const ValueDict& vars) const { return Interpreter(vars).run(*body_); }

}  // namespace triattn::jinja
