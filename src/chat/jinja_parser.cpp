#include "chat/jinja_parser.h"

#include <cerrno>
#include <cstdlib>
#include <initializer_list>

#include "chat/jinja_builtins.h"
#include "chat/jinja_limits.h"
#include "core/error.h"

namespace triattn::jinja {
namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  Body parse_template() { return parse_body({}, 0); }

 private:
  // ---- token helpers ----
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool is_op(const char* op) const { return cur().kind == TokKind::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == TokKind::Name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }

  static std::string describe(const Token& tk) {
    switch (tk.kind) {
      case TokKind::Text: return "text";
      case TokKind::VarBegin: return "'{{'";
      case TokKind::VarEnd: return "'}}'";
      case TokKind::BlockBegin: return "'{%'";
      case TokKind::BlockEnd: return "'%}'";
      case TokKind::Name: return "'" + tk.text + "'";
      case TokKind::String: return "string literal";
      case TokKind::Int:
      case TokKind::Float: return "number " + tk.text;
      case TokKind::Op: return "'" + tk.text + "'";
      case TokKind::Eof: return "end of template";
    }
    return "?";
  }

  [[noreturn]] void error(const std::string& msg) const { fail("chat template line ", cur().line, ": ", msg); }
  [[noreturn]] void unexpected(const std::string& wanted) const {
    error("expected " + wanted + ", got " + describe(cur()));
  }

  void expect_op(const char* op) {
    if (!skip_op(op)) unexpected(std::string("'") + op + "'");
  }
  void expect_block_end() {
    if (cur().kind != TokKind::BlockEnd) unexpected("'%}'");
    next();
  }
  std::string expect_name() {
    if (cur().kind != TokKind::Name) unexpected("a name");
    std::string n = cur().text;
    next();
    return n;
  }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxSyntaxDepth) p.error("template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
  };

  ExprPtr make(Expr::Kind k, int line) { return std::make_unique<Expr>(k, line); }

  // ---- statements ----

  // Parses until a `{% name %}` with name in `ends` (consumes the `{%`, leaves the name).
  Body parse_body(std::initializer_list<const char*> ends, int open_line) {
    DepthGuard g(*this);
    Body out;
    while (true) {
      const Token& tk = cur();
      switch (tk.kind) {
        case TokKind::Text: {
          auto s = std::make_unique<Stmt>(Stmt::Kind::Text, tk.line);
          s->text = tk.text;
          out.push_back(std::move(s));
          next();
          break;
        }
        case TokKind::VarBegin: {
          auto s = std::make_unique<Stmt>(Stmt::Kind::Output, tk.line);
          next();
          s->expr = parse_tuple(true);
          if (cur().kind != TokKind::VarEnd) unexpected("'}}'");
          next();
          out.push_back(std::move(s));
          break;
        }
        case TokKind::BlockBegin: {
          const Token& nm = peek(1);
          if (nm.kind != TokKind::Name) {
            next();
            unexpected("a statement name");
          }
          for (const char* e : ends)
            if (nm.text == e) {
              next();
              return out;
            }
          next();
          out.push_back(parse_statement());
          break;
        }
        case TokKind::Eof:
          if (ends.size() != 0) {
            std::string want;
            for (const char* e : ends) want += std::string(want.empty() ? "" : " or ") + "'" + e + "'";
            error("unexpected end of template, expected " + want + " (block opened on line " +
                  std::to_string(open_line) + ")");
          }
          return out;
        default: unexpected("text or a tag");
      }
    }
  }

  StmtPtr parse_statement() {
    const std::string n = cur().text;
    if (n == "if") return parse_if();
    if (n == "for") return parse_for();
    if (n == "set") return parse_set();
    if (n == "macro") return parse_macro();
    if (n == "break" || n == "continue") {
      auto s = std::make_unique<Stmt>(n == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, cur().line);
      if (loop_depth_ == 0) error("'" + n + "' outside of a for loop");
      next();
      expect_block_end();
      return s;
    }
    if (n == "generation") {  // transformers' assistant-mask extension: renders its body
      auto s = std::make_unique<Stmt>(Stmt::Kind::Sequence, cur().line);
      next();
      expect_block_end();
      s->body = parse_body({"endgeneration"}, s->line);
      next();
      expect_block_end();
      return s;
    }
    if (n.rfind("end", 0) == 0 || n == "elif" || n == "else") error("unexpected '" + n + "'");
    error("unknown tag '" + n + "'");
  }

  StmtPtr parse_if() {
    auto s = std::make_unique<Stmt>(Stmt::Kind::If, cur().line);
    next();
    ExprPtr cond = parse_tuple(false);
    expect_block_end();
    while (true) {
      Body body = parse_body({"elif", "else", "endif"}, s->line);
      s->branches.emplace_back(std::move(cond), std::move(body));
      std::string tag = expect_name();
      if (tag == "elif") {
        cond = parse_tuple(false);
        expect_block_end();
        continue;
      }
      expect_block_end();
      if (tag == "else") {
        s->else_body = parse_body({"endif"}, s->line);
        next();
        expect_block_end();
      }
      return s;
    }
  }

  Target parse_target(bool allow_namespace) {
    Target t;
    bool paren = skip_op("(");
    t.names.push_back(expect_name());
    if (!paren && allow_namespace && skip_op(".")) {
      t.ns_attr = expect_name();
      return t;
    }
    while (skip_op(",")) {
      if (cur().kind != TokKind::Name) break;
      t.names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return t;
  }

  StmtPtr parse_for() {
    auto s = std::make_unique<Stmt>(Stmt::Kind::For, cur().line);
    next();
    s->target = parse_target(false);
    if (!is_name("in")) unexpected("'in'");
    next();
    s->expr = parse_tuple(false);
    if (is_name("if")) {
      next();
      s->filter = parse_expression(true);
    }
    if (is_name("recursive")) error("recursive for loops are not supported");
    expect_block_end();
    ++loop_depth_;
    s->body = parse_body({"endfor", "else"}, s->line);
    --loop_depth_;
    if (expect_name() == "else") {
      expect_block_end();
      s->else_body = parse_body({"endfor"}, s->line);
      next();
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set() {
    int line = cur().line;
    next();
    Target target = parse_target(true);
    if (skip_op("=")) {
      auto s = std::make_unique<Stmt>(Stmt::Kind::Set, line);
      s->target = std::move(target);
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    if (target.names.size() != 1 || !target.ns_attr.empty()) unexpected("'='");
    auto s = std::make_unique<Stmt>(Stmt::Kind::SetBlock, line);
    s->target = std::move(target);
    expect_block_end();
    s->body = parse_body({"endset"}, line);
    next();
    expect_block_end();
    return s;
  }

  StmtPtr parse_macro() {
    auto s = std::make_unique<Stmt>(Stmt::Kind::Macro, cur().line);
    next();
    s->text = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      MacroParam p;
      p.name = expect_name();
      if (skip_op("=")) p.default_value = parse_expression(true);
      s->params.push_back(std::move(p));
      if (!skip_op(",")) break;
    }
    expect_op(")");
    expect_block_end();
    int saved_loops = loop_depth_;
    loop_depth_ = 0;  // a macro body is not inside the caller's loop
    s->body = parse_body({"endmacro"}, s->line);
    loop_depth_ = saved_loops;
    next();
    if (cur().kind == TokKind::Name) next();  // `{% endmacro name %}`
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  bool at_tuple_end() const {
    return cur().kind == TokKind::VarEnd || cur().kind == TokKind::BlockEnd || is_op(")") ||
           is_name("in") || is_name("if") || is_name("recursive") || cur().kind == TokKind::Eof;
  }

  // `a, b` without parentheses is a tuple (list value) in outputs, set values and for loops.
  ExprPtr parse_tuple(bool with_condexpr) {
    int line = cur().line;
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto t = make(Expr::Kind::List, line);
    t->name = "tuple";
    t->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (at_tuple_end()) break;
      t->args.push_back(parse_expression(with_condexpr));
    }
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard g(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr e = parse_or();
    while (is_name("if")) {
      int line = cur().line;
      next();
      auto c = make(Expr::Kind::Cond, line);
      ExprPtr cond = parse_or();
      ExprPtr other;
      if (is_name("else")) {
        next();
        other = parse_condexpr();
      }
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(other));  // may be null: undefined when false
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    auto b = make(Expr::Kind::Binary, line);
    b->name = op;
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    while (is_name("or")) {
      int line = cur().line;
      next();
      l = binary("or", std::move(l), parse_and(), line);
    }
    return l;
  }

  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    while (is_name("and")) {
      int line = cur().line;
      next();
      l = binary("and", std::move(l), parse_not(), line);
    }
    return l;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard g(*this);
      auto u = make(Expr::Kind::Unary, cur().line);
      next();
      u->name = "not";
      u->args.push_back(parse_not());
      return u;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == TokKind::Op &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
           cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek(1).kind == TokKind::Name && peek(1).text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Kind::Compare, line);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = cur().text;
      int line = cur().line;
      next();
      l = binary(op, std::move(l), parse_concat(), line);
    }
    return l;
  }

  ExprPtr parse_concat() {
    ExprPtr l = parse_math2();
    while (is_op("~")) {
      int line = cur().line;
      next();
      l = binary("~", std::move(l), parse_math2(), line);
    }
    return l;
  }

  ExprPtr parse_math2() {
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = cur().text;
      int line = cur().line;
      next();
      l = binary(op, std::move(l), parse_pow(), line);
    }
    return l;
  }

  ExprPtr parse_pow() {
    ExprPtr l = parse_unary(true);
    while (is_op("**")) {
      int line = cur().line;
      next();
      l = binary("**", std::move(l), parse_unary(true), line);
    }
    return l;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard g(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = make(Expr::Kind::Unary, cur().line);
      e->name = cur().text;
      next();
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr literal(Value v, int line) {
    auto e = make(Expr::Kind::Literal, line);
    e->value = std::move(v);
    return e;
  }

  ExprPtr parse_primary() {
    DepthGuard g(*this);
    const Token& tk = cur();
    int line = tk.line;
    switch (tk.kind) {
      case TokKind::Name: {
        std::string n = tk.text;
        next();
        if (n == "true" || n == "True") return literal(Value::boolean(true), line);
        if (n == "false" || n == "False") return literal(Value::boolean(false), line);
        if (n == "none" || n == "None") return literal(Value::none(), line);
        auto e = make(Expr::Kind::Name, line);
        e->name = n;
        return e;
      }
      case TokKind::String: {
        std::string s;
        while (cur().kind == TokKind::String) {  // adjacent literals concatenate
          s += cur().text;
          next();
        }
        return literal(Value(std::move(s)), line);
      }
      case TokKind::Int: {
        errno = 0;
        long long v = std::strtoll(tk.text.c_str(), nullptr, 10);
        if (errno == ERANGE) error("integer literal " + tk.text + " is out of range");
        next();
        return literal(Value::integer(v), line);
      }
      case TokKind::Float: {
        double v = std::strtod(tk.text.c_str(), nullptr);
        next();
        return literal(Value::number(v), line);
      }
      case TokKind::Op:
        if (tk.text == "(") {
          next();
          if (skip_op(")")) {
            auto empty = make(Expr::Kind::List, line);
            empty->name = "tuple";
            return empty;
          }
          ExprPtr e = parse_tuple(true);
          expect_op(")");
          return e;
        }
        if (tk.text == "[") {
          next();
          auto l = make(Expr::Kind::List, line);
          while (!is_op("]")) {
            l->args.push_back(parse_expression(true));
            if (!skip_op(",")) break;
          }
          expect_op("]");
          return l;
        }
        if (tk.text == "{") {
          next();
          auto d = make(Expr::Kind::Dict, line);
          while (!is_op("}")) {
            d->args.push_back(parse_expression(true));
            expect_op(":");
            d->args.push_back(parse_expression(true));
            if (!skip_op(",")) break;
          }
          expect_op("}");
          return d;
        }
        break;
      default: break;
    }
    unexpected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        int line = cur().line;
        next();
        if (cur().kind == TokKind::Name) {
          auto a = make(Expr::Kind::GetAttr, line);
          a->name = cur().text;
          next();
          a->args.push_back(std::move(e));
          e = std::move(a);
        } else if (cur().kind == TokKind::Int) {
          auto idx = literal(Value::integer(std::strtoll(cur().text.c_str(), nullptr, 10)), line);
          next();
          auto a = make(Expr::Kind::GetItem, line);
          a->args.push_back(std::move(e));
          a->args.push_back(std::move(idx));
          e = std::move(a);
        } else {
          unexpected("an attribute name");
        }
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    int line = cur().line;
    next();  // [
    ExprPtr start, stop, step;
    bool is_slice = false;
    if (!is_op(":")) start = parse_expression(true);
    if (skip_op(":")) {
      is_slice = true;
      if (!is_op(":") && !is_op("]")) stop = parse_expression(true);
      if (skip_op(":") && !is_op("]")) step = parse_expression(true);
    }
    expect_op("]");
    if (!is_slice) {
      auto g = make(Expr::Kind::GetItem, line);
      g->args.push_back(std::move(obj));
      g->args.push_back(std::move(start));
      return g;
    }
    auto s = make(Expr::Kind::Slice, line);
    s->args.push_back(std::move(obj));
    s->args.push_back(std::move(start));
    s->args.push_back(std::move(stop));
    s->args.push_back(std::move(step));
    return s;
  }

  // Parses `(args)` into e->args (after any operands already there) and e->kwargs.
  void parse_call_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) error("*args / **kwargs in calls are not supported");
      if (cur().kind == TokKind::Name && peek(1).kind == TokKind::Op && peek(1).text == "=") {
        std::string key = cur().text;
        next();
        next();
        e.kwargs.emplace_back(key, parse_expression(true));
      } else {
        if (!e.kwargs.empty()) error("positional argument after keyword argument");
        e.args.push_back(parse_expression(true));
      }
      if (!skip_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto c = make(Expr::Kind::Call, cur().line);
    c->args.push_back(std::move(callee));
    parse_call_args(*c);
    return c;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        auto f = make(Expr::Kind::Filter, cur().line);
        next();
        f->name = expect_name();
        while (is_op(".")) {  // dotted filter names
          next();
          f->name += "." + expect_name();
        }
        if (!is_known_filter(f->name)) fail("chat template line ", f->line, ": no filter named '", f->name, "'");
        f->args.push_back(std::move(e));
        if (is_op("(")) parse_call_args(*f);
        e = std::move(f);
      } else if (is_name("is")) {
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_test(ExprPtr e) {
    auto t = make(Expr::Kind::Test, cur().line);
    next();  // is
    if (is_name("not")) {
      t->negated = true;
      next();
    }
    t->name = expect_name();
    if (!is_known_test(t->name)) fail("chat template line ", t->line, ": no test named '", t->name, "'");
    t->args.push_back(std::move(e));
    if (is_op("(")) {
      parse_call_args(*t);
    } else if ((cur().kind == TokKind::Name || cur().kind == TokKind::String || cur().kind == TokKind::Int ||
                cur().kind == TokKind::Float || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      // `x is divisibleby 3`: one argument without parentheses.
      if (is_name("is")) error("cannot chain multiple tests with 'is'");
      t->args.push_back(parse_postfix(parse_primary()));
    }
    return t;
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace triattn::jinja
