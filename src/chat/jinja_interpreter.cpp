// Walks the syntax tree and writes the output (the implementation behind jinja::Template). Scoping follows Jinja: each for-loop
// iteration and each macro call gets its own frame, so `set` inside them does not leak out
// (templates use namespace() for state that must survive a loop); `if` has no scope.
// Every node, statement, iteration and call is charged to the render's Budget, and the
// output is checked against kMaxOutputBytes before each append (jinja_limits.h).
#include <new>
#include <stdexcept>
#include <unordered_map>

#include "chat/jinja_budget.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_errors.h"
#include "chat/jinja_template.h"
#include "chat/jinja_parser.h"

namespace triattn::jinja {
namespace {

using Frame = std::unordered_map<std::string, Value>;
using Frames = std::vector<std::shared_ptr<Frame>>;

// How many items range(start, stop, step) has, computed unsigned so that no bound overflows.
uint64_t range_length(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 && start < stop)
    return (static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) - 1) / static_cast<uint64_t>(step) + 1;
  if (step < 0 && start > stop)
    return (static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) - 1) / (0 - static_cast<uint64_t>(step)) + 1;
  return 0;
}

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
  const uint64_t n = range_length(start, stop, step);
  if (n > kMaxListItems) fail("range(): ", n, " items is over the limit of ", kMaxListItems, " for one list");
  ValueList out;
  out.reserve(n);
  for (uint64_t k = 0; k < n; ++k) out.push_back(Value::integer(start + static_cast<int64_t>(k) * step));
  return Value::list(std::move(out));
}

// namespace(dict?, key=value...) and dict(key=value...). Each set scans the keys so far.
ValueDict kwargs_dict(Budget& budget, const CallArgs& a, const char* fn) {
  ValueDict d;
  auto set = [&](const std::string& k, const Value& v) {
    budget.step(static_cast<int64_t>(d.items.size() / 16));
    d.set(k, v);
  };
  for (const Value& p : a.pos) {
    if (!p.is_dict()) fail(fn, "(): positional arguments must be mappings");
    for (const auto& [k, v] : p.dict_ref().items) set(k, v);
  }
  for (const auto& [k, v] : a.kw) set(k, v);
  return d;
}

class Interpreter {
 public:
  explicit Interpreter(const ValueDict& vars) {
    auto globals = std::make_shared<Frame>();
    (*globals)["range"] = Value::callable("range", builtin_range);
    (*globals)["namespace"] = Value::callable("namespace", [this](const CallArgs& a) {
      namespaces_.push_back(Value::new_namespace(kwargs_dict(budget_, a, "namespace")));
      return namespaces_.back();
    });
    (*globals)["dict"] = Value::callable(
        "dict", [this](const CallArgs& a) { return Value::dict(kwargs_dict(budget_, a, "dict")); });
    for (const auto& [k, v] : vars.items) (*globals)[k] = v;
    frames_.push_back(globals);
    frames_.push_back(std::make_shared<Frame>());  // template-level `set`s shadow the variables
  }

  // Macros capture the frames they were defined in, which hold the macro itself, and a
  // namespace may hold itself: clear those so the cycles of shared pointers are freed. The
  // namespaces are all alive until here, so freeing what they hold recurses no deeper than
  // kMaxNesting.
  ~Interpreter() {
    for (auto& f : macro_frames_) f->clear();
    for (auto& ns : namespaces_) ns.namespace_ref().items.clear();
  }

  std::string run(const Body& body) {
    out_ = &output_;
    try {
      exec_body(body);
    } catch (const TemplateRaised&) {
      throw;
    } catch (const LocatedError&) {
      throw;
    } catch (const Error& e) {
      throw LocatedError(std::string("chat template: ") + e.what());
    }
    return std::move(output_);
  }

  int64_t steps() const { return budget_.steps(); }

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
    Value seq = iterate(v);
    const ValueList& items = seq.list_ref();
    if (items.size() != t.names.size())
      fail(items.size() < t.names.size() ? "not enough" : "too many", " values to unpack (expected ",
           t.names.size(), ", got ", items.size(), ")");
    for (size_t i = 0; i < items.size(); ++i) top[t.names[i]] = items[i];
  }

  // Appends to the output being written: the render's own, checked against kMaxOutputBytes,
  // or a macro's or `set` block's, which becomes a string value.
  void emit(std::string_view text) {
    const size_t size = out_->size() + text.size();
    if (out_ != &output_) check_string_size(size);
    else if (size > kMaxOutputBytes)
      fail("the output would be over the limit of ", kMaxOutputBytes, " bytes (16 MiB)");
    budget_.bytes(text.size());
    out_->append(text);
  }

  Flow exec_body(const Body& body) {
    for (const auto& s : body) {
      Flow f = exec(*s);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec(const Stmt& s) {
    located(s.line, [&] { budget_.step(); });
    switch (s.kind) {
      case Stmt::Kind::Text: located(s.line, [&] { emit(s.text); }); return Flow::Normal;
      case Stmt::Kind::Output: {
        Value v = eval(*s.expr);
        located(s.line, [&] { v.is_string() ? emit(v.str_ref()) : emit(v.to_str()); });
        return Flow::Normal;
      }
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
        try {
          exec_body(s.body);
        } catch (...) {
          out_ = saved;
          throw;
        }
        out_ = saved;
        located(s.line, [&] { assign(s.target, Value(std::move(captured))); });
        return Flow::Normal;
      }
      case Stmt::Kind::Macro: located(s.line, [&] { define_macro(s); }); return Flow::Normal;
      case Stmt::Kind::Break: return Flow::Break;
      case Stmt::Kind::Continue: return Flow::Continue;
      case Stmt::Kind::Sequence: return exec_body(s.body);
    }
    return Flow::Normal;
  }

  Flow exec_for(const Stmt& s) {
    Value iterable = eval(*s.expr);
    Value seq = located(s.line, [&] {
      Value items = iterate(iterable);
      if (!iterable.is_list()) budget_.built(items);  // dict keys or string chars were built
      return items;
    });
    const ValueList* items = &seq.list_ref();
    ValueList kept;
    if (s.filter) {
      // `for x in xs if cond`: filtered before the loop, so loop.index/length count only
      // the items that pass.
      for (const Value& item : *items) {
        located(s.line, [&] { budget_.step(); });
        frames_.push_back(std::make_shared<Frame>());
        bool pass;
        try {
          located(s.line, [&] { assign(s.target, item); });
          pass = eval(*s.filter).truthy();
        } catch (...) {
          frames_.pop_back();
          throw;
        }
        frames_.pop_back();
        if (pass) kept.push_back(item);
      }
      items = &kept;
    }
    if (items->empty()) return exec_body(s.else_body);
    const int64_t n = static_cast<int64_t>(items->size());
    for (int64_t i = 0; i < n; ++i) {
      auto frame = std::make_shared<Frame>();
      ValueDict loop;
      loop.items = {{"index", Value::integer(i + 1)},      {"index0", Value::integer(i)},
                    {"revindex", Value::integer(n - i)},   {"revindex0", Value::integer(n - i - 1)},
                    {"first", Value::boolean(i == 0)},     {"last", Value::boolean(i == n - 1)},
                    {"length", Value::integer(n)},         {"depth", Value::integer(1)},
                    {"depth0", Value::integer(0)}};
      if (i > 0) loop.items.emplace_back("previtem", (*items)[static_cast<size_t>(i - 1)]);
      if (i + 1 < n) loop.items.emplace_back("nextitem", (*items)[static_cast<size_t>(i + 1)]);
      Value loop_value = Value::dict(std::move(loop));
      // An iteration costs a step plus what its `loop` object takes to build, which is most
      // of the work of an iteration with a short body.
      located(s.line, [&] {
        budget_.step();
        budget_.built(loop_value);
      });
      (*frame)["loop"] = std::move(loop_value);
      frames_.push_back(frame);
      Flow f;
      try {
        located(s.line, [&] { assign(s.target, (*items)[static_cast<size_t>(i)]); });
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
    budget_.bytes((frames_.size() + 1) * sizeof(frames_[0]) + sizeof(Callable));  // the closure it keeps
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
    // A call costs a step plus the frames it copies and the one it makes.
    budget_.step();
    budget_.bytes((closure.size() + 1) * sizeof(closure[0]) + (def.params.size() + 1) * sizeof(Frame::value_type));
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
    budget_.step();
    switch (e.kind) {
      case Expr::Kind::Literal: return e.value;
      case Expr::Kind::Name: return lookup(e.name);
      case Expr::Kind::GetAttr: return get_attr(budget_, eval(*e.args[0]), e.name);
      case Expr::Kind::GetItem: {
        Value obj = eval(*e.args[0]);
        return get_item(budget_, obj, eval(*e.args[1]));
      }
      case Expr::Kind::Slice: {
        Value obj = eval(*e.args[0]);
        auto opt = [&](size_t i) { return e.args[i] ? eval(*e.args[i]) : Value::none(); };
        Value a = opt(1), b = opt(2), c = opt(3);
        return slice(budget_, obj, a, b, c);
      }
      case Expr::Kind::Call: return eval_call(e);
      case Expr::Kind::Filter: {
        Value v = eval(*e.args[0]);
        return apply_filter(budget_, e.name, v, eval_args(e, 1));
      }
      case Expr::Kind::Test: {
        Value v = eval(*e.args[0]);
        return Value::boolean(apply_test(budget_, e.name, v, eval_args(e, 1)) != e.negated);
      }
      case Expr::Kind::Unary: {
        Value v = eval(*e.args[0]);
        if (e.name == "not") return Value::boolean(!v.truthy());
        if (v.is_undefined()) fail(v.undefined_hint().empty() ? "undefined value used" : v.undefined_hint());
        if (!v.is_number()) fail("bad operand type for unary ", e.name, ": '", v.type_name(), "'");
        if (e.name == "+") return v.is_float() ? v : Value::integer(v.as_int());
        if (v.is_float()) return Value::number(-v.as_float());
        return binary_op(budget_, "-", Value::integer(0), v);  // checks the overflow of -(-2^63)
      }
      case Expr::Kind::Binary: {
        Value l = eval(*e.args[0]);
        if (e.name == "and") return l.truthy() ? eval(*e.args[1]) : l;
        if (e.name == "or") return l.truthy() ? l : eval(*e.args[1]);
        return binary_op(budget_, e.name, l, eval(*e.args[1]));
      }
      case Expr::Kind::Compare: {
        Value left = eval(*e.args[0]);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1]);
          if (!compare_op(budget_, e.ops[i], left, right)) return Value::boolean(false);
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
        Value list = e.name == "tuple" ? Value::tuple(std::move(items)) : Value::list(std::move(items));
        budget_.built(list);
        return list;
      }
      case Expr::Kind::Dict: {
        ValueDict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value k = eval(*e.args[i]);
          if (!k.is_string()) fail("dict literal keys must be strings, not ", k.type_name());
          d.set(k.str_ref(), eval(*e.args[i + 1]));
        }
        Value dict = Value::dict(std::move(d));
        budget_.built(dict);
        return dict;
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
      if (call_method(budget_, obj, callee.name, a, res)) return res;
      fn = get_attr(budget_, obj, callee.name);
      return invoke(fn, a);
    }
    fn = eval(callee);
    return invoke(fn, eval_args(e, 1));
  }

  // Calls a function value: a macro, a global such as range(), or one the caller passed in.
  Value invoke(const Value& fn, const CallArgs& a) {
    if (fn.is_undefined()) fail(fn.undefined_hint().empty() ? "call of an undefined value" : fn.undefined_hint());
    if (!fn.is_callable()) fail("'", fn.type_name(), "' object is not callable");
    Value result = fn.callable_ref().fn(a);
    budget_.built(result);
    return result;
  }

  Budget budget_;
  Frames frames_;
  Frames macro_frames_;
  std::vector<Value> namespaces_;  // every namespace() made, cleared at the end (see ~Interpreter)
  std::string output_;
  std::string* out_ = nullptr;
  int call_depth_ = 0;
};

}  // namespace

Template::Template(const std::string& source, const LexOptions& opt)
    : body_(std::make_shared<const Body>(parse(lex(source, opt)))) {}

std::string Template::render(const ValueDict& vars, int64_t* steps_used) const {
  Interpreter interpreter(vars);
  std::string out = interpreter.run(*body_);
  if (steps_used) *steps_used = interpreter.steps();
  return out;
}

}  // namespace triattn::jinja
