#pragma once
// Syntax tree of a parsed template. Nodes carry the template line they start on so runtime
// errors can name it. The interpreter walks the tree; nothing here evaluates.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace triattn::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Expr {
  enum class Kind {
    Literal,   // value
    Name,      // name
    GetAttr,   // a.name
    GetItem,   // a[b]
    Slice,     // a[b:c:d] (children may be null)
    Call,      // a(args)
    Filter,    // a | name(args)
    Test,      // a is [not] name(args)
    Unary,     // op a: "-", "+", "not"
    Binary,    // a op b: + - * / // % ** ~ and or
    Compare,   // a op b op c ...: == != < <= > >= in notin
    Cond,      // a if b else c
    List,      // [a, b]; name == "tuple" for (a, b) and a, b
    Dict,      // {k: v}
  };
  Kind kind;
  int line;
  Value value;                 // Literal
  std::string name;            // Name, GetAttr attribute, Filter/Test name, Unary/Binary op
  bool negated = false;        // Test
  std::vector<ExprPtr> args;   // operands / call args / list items / dict k,v pairs flattened
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // Call / Filter / Test keyword args
  std::vector<std::string> ops;  // Compare operators, one per operand after the first

  Expr(Kind k, int l) : kind(k), line(l) {}
};

// Where `set` and `for` store values: a name, `ns.attr`, or a tuple of names.
struct Target {
  std::vector<std::string> names;  // more than one: tuple unpacking
  std::string ns_attr;             // non-empty: names[0] is a namespace, assign this attribute
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, Sequence };
  Kind kind;
  int line;
  std::string text;                // Text; Macro name
  ExprPtr expr;                    // Output value; For iterable; Set value
  ExprPtr filter;                  // For `if` filter
  Target target;                   // For / Set / SetBlock
  std::vector<std::pair<ExprPtr, Body>> branches;  // If: (condition, body) per if/elif
  Body body;                       // For / SetBlock / Macro / Sequence body
  Body else_body;                  // If / For else
  std::vector<MacroParam> params;  // Macro

  Stmt(Kind k, int l) : kind(k), line(l) {}
};

}  // namespace triattn::jinja
