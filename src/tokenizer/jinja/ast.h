// Syntax tree of a parsed template. Plain structs with a kind tag; the interpreter switches on
// the kind. Every node keeps its source line for error messages.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace portllm::tok::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Expr {
  enum class Kind {
    Literal,    // value
    Name,       // name
    Attr,       // a.name
    Item,       // a[b]
    Slice,      // a[b:c:d]; absent parts are null in `args`
    Call,       // a(args, kwargs)
    Filter,     // a | name(args, kwargs)
    Test,       // a is [not] name(args)
    Unary,      // op a: "-", "+", "not"
    Binary,     // a op b: + - * / // % ** ~ and or
    Compare,    // a op1 b op2 c ... (ops in `ops`, operands in `args`)
    Ternary,    // b if a else c (c may be null)
    ListLit,    // [args...]
    TupleLit,   // (args...)
    DictLit,    // {keys: args}, keys in args[0,2,4..], values in args[1,3,5..]
    BodyValue,  // the rendered body of a filter block / block set
  };
  Kind kind;
  int line = 0;
  std::string name;                 // Name/Attr/Filter/Test/Unary/Binary op
  Value value;                      // Literal
  ExprPtr a, b, c;                  // operands
  std::vector<ExprPtr> args;        // positional args / items / slice parts / compare operands
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;     // Compare operators
  bool negated = false;             // Test: `is not`
};

// An assignment target: a name, a tuple of names, or `ns.attr`.
struct Target {
  std::vector<std::string> names;  // >1: tuple unpacking
  std::string attr;                // non-empty: names[0].attr = ...
};

struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // defaults[i] for params[i], null if none
  Body body;
};

struct Stmt {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, Break, Continue, With };
  Kind kind;
  int line = 0;
  std::string text;                                   // Text
  ExprPtr expr;                                       // Output/Set value, For iterable, CallBlock call, filter chain
  ExprPtr cond;                                       // For `if` filter
  std::vector<std::pair<ExprPtr, Body>> branches;     // If: (cond, body) per if/elif
  Body body, else_body;                               // For/SetBlock/CallBlock/FilterBlock/With/If-else
  Target target;                                      // For/Set/SetBlock
  std::shared_ptr<MacroDef> macro;                    // Macro, and CallBlock's caller (name "caller")
  std::vector<std::pair<std::string, ExprPtr>> assigns;  // With
};

}  // namespace portllm::tok::jinja
