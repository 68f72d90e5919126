#include "tokenizer/jinja/interpreter.h"

#include "core/error.h"
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/parser.h"
#include "tokenizer/jinja/render_arena.h"

namespace portllm::tok::jinja {
namespace {

// One scope. Lookups walk the parent chain; assignments go to the innermost frame.
struct Frame {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Frame> parent;

  const Value* find(std::string_view n) const {
    for (const Frame* f = this; f; f = f->parent.get())
      for (auto& kv : f->vars)
        if (kv.first == n) return &kv.second;
    return nullptr;
  }
  void set(const std::string& n, Value v) {
    for (auto& kv : vars)
      if (kv.first == n) {
        kv.second = std::move(v);
        return;
      }
    vars.emplace_back(n, std::move(v));
  }
};
using FramePtr = std::shared_ptr<Frame>;

enum class Flow { Normal, Break, Continue };

class Renderer {
 public:
  explicit Renderer(const std::string& name) : name_(name) {}

  FramePtr frame;

  Flow exec(const Body& body, std::string& out) {
    for (auto& s : body) {
      Flow f = exec(*s, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

 private:
  // Swaps in a scope for the lifetime of the guard.
  struct ScopeGuard {
    Renderer& r;
    FramePtr saved;
    ScopeGuard(Renderer& r_, FramePtr f) : r(r_), saved(std::move(r_.frame)) { r.frame = std::move(f); }
    ~ScopeGuard() { r.frame = std::move(saved); }
  };

  FramePtr child_of(const FramePtr& parent) {
    auto f = std::make_shared<Frame>();
    f->parent = parent;
    return f;
  }

  [[noreturn]] void fail(int line, const std::string& msg) { PL_THROW("{}:{}: {}", name_, line, msg); }

  Flow exec(const Stmt& s, std::string& out) {
    try {
      return exec_inner(s, out);
    } catch (const TypeError& e) {
      fail(s.line, e.what());
    }
  }

  Flow exec_inner(const Stmt& s, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::Text: out += s.text; return Flow::Normal;
      case Stmt::Kind::Output: {
        if (s.expr->kind == Expr::Kind::Literal && s.expr->value.is_string()) {
          out += s.expr->value.s;  // the common `{{- '<|im_start|>' }}`: no copy
          return Flow::Normal;
        }
        Value v = eval(*s.expr);
        if (v.is_string()) out += v.s;
        else out += v.str();
        return Flow::Normal;
      }
      case Stmt::Kind::If:
        for (auto& [cond, body] : s.branches)
          if (eval(*cond).truthy()) return exec(body, out);
        return exec(s.else_body, out);
      case Stmt::Kind::For: return exec_for(s, out);
      case Stmt::Kind::Set: assign(s.target, eval(*s.expr), s.line); return Flow::Normal;
      case Stmt::Kind::SetBlock: {
        std::string body;
        exec(s.body, body);
        assign(s.target, eval_on_body(*s.expr, std::move(body)), s.line);
        return Flow::Normal;
      }
      case Stmt::Kind::FilterBlock: {
        std::string body;
        exec(s.body, body);
        out += eval_on_body(*s.expr, std::move(body)).str();
        return Flow::Normal;
      }
      case Stmt::Kind::Macro: frame->set(s.macro->name, make_macro(s.macro.get(), frame)); return Flow::Normal;
      case Stmt::Kind::CallBlock: {
        Value caller = make_macro(s.macro.get(), frame);
        out += call(*s.expr, &caller).str();
        return Flow::Normal;
      }
      case Stmt::Kind::With: {
        auto f = child_of(frame);
        for (auto& [n, e] : s.assigns) f->set(n, eval(*e));
        ScopeGuard g(*this, f);
        return exec(s.body, out);
      }
      case Stmt::Kind::Break: return Flow::Break;
      case Stmt::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
  }

  void bind(Frame& f, const Target& t, const Value& v, int line) {
    if (t.names.size() == 1) {
      f.set(t.names[0], v);
      return;
    }
    List items = iterate(v);
    if (items.size() != t.names.size())
      fail(line, "cannot unpack " + std::to_string(items.size()) + " values into " +
                     std::to_string(t.names.size()) + " names");
    for (size_t k = 0; k < items.size(); ++k) f.set(t.names[k], items[k]);
  }

  void assign(const Target& t, Value v, int line) {
    if (!t.attr.empty()) {
      const Value* obj = frame->find(t.names[0]);
      if (!obj || !obj->is_namespace())
        fail(line, "cannot assign attribute '" + t.attr + "' on '" + t.names[0] + "': not a namespace()");
      obj->dict->set(t.attr, std::move(v));
      return;
    }
    bind(*frame, t, v, line);
  }

  Flow exec_for(const Stmt& s, std::string& out) {
    Value seq = eval(*s.expr);
    if (seq.is_none()) fail(s.line, "'NoneType' object is not iterable");
    List items = iterate(seq);
    if (s.cond) {  // `for x in xs if cond`: filter first, so loop.length/last see the filtered list
      List kept;
      for (auto& it : items) {
        auto f = child_of(frame);
        bind(*f, s.target, it, s.line);
        ScopeGuard g(*this, f);
        if (eval(*s.cond).truthy()) kept.push_back(it);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      ScopeGuard g(*this, child_of(frame));
      return exec(s.else_body, out);
    }
    FramePtr outer = frame;
    int64_t n = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < n; ++k) {
      auto f = child_of(outer);
      auto loop = make_dict();
      loop->items.reserve(11);
      loop->items.emplace_back("index", Value(k + 1));
      loop->items.emplace_back("index0", Value(k));
      loop->items.emplace_back("revindex", Value(n - k));
      loop->items.emplace_back("revindex0", Value(n - k - 1));
      loop->items.emplace_back("first", Value(k == 0));
      loop->items.emplace_back("last", Value(k == n - 1));
      loop->items.emplace_back("length", Value(n));
      loop->items.emplace_back("depth", Value(1));
      loop->items.emplace_back("depth0", Value(0));
      if (k > 0) loop->items.emplace_back("previtem", items[static_cast<size_t>(k - 1)]);
      if (k + 1 < n) loop->items.emplace_back("nextitem", items[static_cast<size_t>(k + 1)]);
      f->set("loop", Value(loop));
      bind(*f, s.target, items[static_cast<size_t>(k)], s.line);
      ScopeGuard g(*this, f);
      if (exec(s.body, out) == Flow::Break) break;
    }
    return Flow::Normal;
  }

  // Macros close over the scope they were defined in (jinja2 macros see the template's
  // variables, not the caller's loop variables). The scope is held weakly: the macro value
  // lives in that scope, and a strong reference would be a cycle that leaks every render.
  Value make_macro(const MacroDef* m, const FramePtr& defined_in) {
    auto c = std::make_shared<Callable>();
    c->name = m->name;
    std::weak_ptr<Frame> weak = defined_in;
    c->fn = [this, m, weak](const Args& args) -> Value {
      // Python stops runaway recursion with RecursionError; we stop before the C++ stack does.
      struct DepthGuard {
        int& d;
        ~DepthGuard() { --d; }
      } depth_guard{++call_depth_};
      if (call_depth_ > kMaxCallDepth) throw TypeError("macro '" + m->name + "': maximum recursion depth exceeded");
      FramePtr scope = weak.lock();
      auto f = child_of(scope ? scope : frame);
      ScopeGuard g(*this, f);
      size_t np = m->params.size();
      for (size_t k = 0; k < np; ++k) {
        const Value* v = args.get(k, m->params[k]);
        if (v) f->set(m->params[k], *v);
        else if (m->defaults[k]) f->set(m->params[k], eval(*m->defaults[k]));
        else f->set(m->params[k], Value());
      }
      List varargs;
      for (size_t k = np; k < args.pos.size(); ++k) varargs.push_back(args.pos[k]);
      f->set("varargs", Value(std::move(varargs)));
      auto kwargs = make_dict();
      for (auto& [k, v] : args.kw) {
        bool is_param = false;
        for (auto& p : m->params) is_param |= p == k;
        if (k == "caller") f->set("caller", v);
        else if (!is_param) kwargs->set(k, v);
      }
      f->set("kwargs", Value(kwargs));
      std::string out;
      exec(m->body, out);
      return Value(std::move(out));
    };
    return Value(c);
  }

  Value eval_on_body(const Expr& chain, std::string body) {
    Value saved = std::move(body_value_);
    body_value_ = Value(std::move(body));
    Value r = eval(chain);
    body_value_ = std::move(saved);
    return r;
  }

  Args eval_args(const Expr& e) {
    Args a;
    a.pos.reserve(e.args.size());
    for (auto& x : e.args) a.pos.push_back(eval(*x));
    for (auto& [k, x] : e.kwargs) a.kw.emplace_back(k, eval(*x));
    return a;
  }

  Value lookup(const std::string& n) {
    if (const Value* v = frame->find(n)) return *v;
    if (is_known_global_function(n)) return make_global_function(n);
    return Value();
  }

  Value call(const Expr& e, const Value* caller) {
    Args args = eval_args(e);
    if (caller) args.kw.emplace_back("caller", *caller);
    const Expr& callee = *e.a;
    if (callee.kind == Expr::Kind::Attr) {
      Value obj = eval(*callee.a);
      if (callee.name == "cycle" && obj.is_dict() && obj.dict->find("index0")) {
        if (args.pos.empty()) throw TypeError("loop.cycle() needs at least one argument");
        return args.pos[static_cast<size_t>(obj.dict->find("index0")->i) % args.pos.size()];
      }
      bool found = false;
      Value r = call_method(obj, callee.name, args, found);
      if (found) return r;
      Value fn = get_attr(obj, callee.name);
      if (fn.is_callable()) return fn.fn->fn(args);
      throw TypeError(std::string("'") + obj.type_name() + "' object has no method '" + callee.name + "'");
    }
    Value fn = eval(callee);
    if (!fn.is_callable()) {
      if (callee.kind == Expr::Kind::Name) throw TypeError("'" + callee.name + "' is undefined or not callable");
      throw TypeError(std::string("'") + fn.type_name() + "' object is not callable");
    }
    return fn.fn->fn(args);
  }

  Value eval(const Expr& e) {
    try {
      return eval_inner(e);
    } catch (const TypeError& x) {
      fail(e.line, x.what());
    }
  }

  Value eval_inner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Literal: return e.value;
      case Expr::Kind::Name: return lookup(e.name);
      case Expr::Kind::BodyValue: return body_value_;
      case Expr::Kind::Attr: return get_attr(eval(*e.a), e.name);
      case Expr::Kind::Item: return get_item(eval(*e.a), eval(*e.b));
      case Expr::Kind::Slice: {
        Value obj = eval(*e.a);
        Args a;
        for (auto& p : e.args) a.pos.push_back(p ? eval(*p) : Value::none());
        bool found = false;
        return call_method(obj, "__slice__", a, found);
      }
      case Expr::Kind::Call: return call(e, nullptr);
      case Expr::Kind::Filter: return apply_filter(e.name, eval(*e.a), eval_args(e));
      case Expr::Kind::Test: {
        bool r = apply_test(e.name, eval(*e.a), eval_args(e));
        return Value(e.negated ? !r : r);
      }
      case Expr::Kind::Unary: {
        Value v = eval(*e.a);
        if (e.name == "not") return Value(!v.truthy());
        if (e.name == "-") return negate(v);
        if (!v.is_number()) throw TypeError(std::string("bad operand type for unary +: '") + v.type_name() + "'");
        return v;
      }
      case Expr::Kind::Binary: {
        Value l = eval(*e.a);
        if (e.name == "and") return l.truthy() ? eval(*e.b) : l;
        if (e.name == "or") return l.truthy() ? l : eval(*e.b);
        return binary_op(e.name, l, eval(*e.b));
      }
      case Expr::Kind::Compare: {
        Value l = eval(*e.args[0]);
        for (size_t k = 0; k < e.ops.size(); ++k) {
          Value r = eval(*e.args[k + 1]);
          if (!compare_op(e.ops[k], l, r)) return Value(false);
          l = std::move(r);
        }
        return Value(true);
      }
      case Expr::Kind::Ternary:
        if (eval(*e.a).truthy()) return eval(*e.b);
        return e.c ? eval(*e.c) : Value();
      case Expr::Kind::ListLit:
      case Expr::Kind::TupleLit: {
        List l;
        l.reserve(e.args.size());
        for (auto& x : e.args) l.push_back(eval(*x));
        return e.kind == Expr::Kind::TupleLit ? Value::make_tuple(std::move(l)) : Value(std::move(l));
      }
      case Expr::Kind::DictLit: {
        auto d = make_dict();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          Value key = eval(*e.args[k]);
          d->set(key.is_string() ? key.s : key.str(), eval(*e.args[k + 1]));
        }
        return Value(d);
      }
    }
    return Value();
  }

  static constexpr int kMaxCallDepth = 200;
  const std::string& name_;
  Value body_value_;
  int call_depth_ = 0;
};

}  // namespace

Template::Template(const std::string& source, std::string name, const LexOptions& opt) : name_(std::move(name)) {
  body_ = parse(lex(source, name_, opt), name_);
}

std::string Template::render(const std::vector<std::pair<std::string, Value>>& vars) const {
  RenderArena arena(vars);  // declared first: collects after the renderer's scopes are gone
  Renderer r(name_);
  r.frame = std::make_shared<Frame>();
  r.frame->vars = vars;
  std::string out;
  try {
    r.exec(body_, out);
  } catch (const TemplateRaise& e) {
    throw ::portllm::Error(e.what());
  } catch (const ::portllm::Error&) {
    throw;
  } catch (const std::exception& e) {  // a library exception that escaped a builtin
    PL_THROW("{}: {}", name_, e.what());
  }
  return out;
}

}  // namespace portllm::tok::jinja
