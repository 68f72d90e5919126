#include "tokenizer/jinja/parser.h"

#include <cerrno>
#include <cstdlib>
#include <set>

#include "core/error.h"
#include "tokenizer/jinja/builtins.h"

namespace portllm::tok::jinja {
namespace {

using TT = Token::Type;

class Parser {
 public:
  Parser(const std::vector<Token>& toks, const std::string& name) : t_(toks), name_(name) {
    bound_names_.insert("caller");  // bound inside macros invoked by a call block
  }

  Body run() {
    std::string end;
    Body body = parse_until({}, end);
    // Calls of plain names must reach a builtin, a macro or a variable the template binds.
    for (auto& [fn, line] : called_names_) {
      if (!is_known_global_function(fn) && !bound_names_.count(fn))
        fail_at(line, "unsupported function '" + fn + "'");
    }
    return body;
  }

 private:
  // ---- nesting bound ----
  // Every edge of the syntax tree comes from a recursive parse call or from one step of a
  // left-associative loop (a + b + c, x.a.b, x|f|g); both count here. So no tree, and no
  // recursive evaluation or destruction of one, is deeper than kMaxDepth however the template is
  // written: a template nested 50,000 deep is refused instead of overflowing the stack. Real
  // templates reach 36 (Qwen3's, Qwen3.6's, Llama 3's, DeepSeek's: the count passes each
  // precedence level, about ten per parenthesis).
  static constexpr int kMaxDepth = 1024;
  int depth_ = 0;
  class Deeper {
   public:
    explicit Deeper(Parser& p) : p_(p) { step(); }
    ~Deeper() { p_.depth_ -= n_; }
    void step() {
      ++n_;
      if (++p_.depth_ > kMaxDepth) p_.fail(fmt::format("expressions and blocks nest deeper than {} levels", kMaxDepth));
    }

   private:
    Parser& p_;
    int n_ = 0;
  };

  // ---- token helpers ----
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  [[noreturn]] void fail_at(int line, const std::string& msg) const { PL_THROW("{}:{}: {}", name_, line, msg); }
  [[noreturn]] void fail(const std::string& msg) const { fail_at(cur().line, msg); }
  bool is_op(const char* op) const { return cur().type == TT::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == TT::Name && cur().text == n; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool accept_name(const char* n) {
    if (!is_name(n)) return false;
    ++i_;
    return true;
  }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case TT::Eof: return "end of template";
      case TT::BlockEnd: return "end of statement '%}'";
      case TT::VarEnd: return "end of expression '}}'";
      case TT::String: return "string";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(std::string("expected '") + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != TT::Name) fail("expected a name, got " + describe(cur()));
    return t_[i_++].text;
  }
  void expect(TT type, const char* what) {
    if (cur().type != type) fail(std::string("expected ") + what + ", got " + describe(cur()));
    ++i_;
  }
  void expect_block_end() { expect(TT::BlockEnd, "'%}'"); }

  ExprPtr node(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }
  StmtPtr stmt(Stmt::Kind k, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = k;
    s->line = line;
    return s;
  }

  // ---- statements ----

  // Parses statements until a block tag whose name is in `ends`; consumes `{% name` and stores
  // the name in `end` (the caller parses the rest of that tag). Empty `ends`: until Eof.
  Body parse_until(std::initializer_list<const char*> ends, std::string& end, int open_line = 0) {
    Deeper nest(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == TT::Eof) {
        if (ends.size() == 0) return body;
        std::string want;
        for (const char* e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
        fail_at(open_line, "block opened here is not closed (expected " + want + " before end of template)");
      }
      if (t.type == TT::Text) {
        auto s = stmt(Stmt::Kind::Text, t.line);
        s->text = t.text;
        body.push_back(std::move(s));
        ++i_;
      } else if (t.type == TT::VarBegin) {
        ++i_;
        auto s = stmt(Stmt::Kind::Output, t.line);
        s->expr = parse_tuple();
        expect(TT::VarEnd, "'}}'");
        body.push_back(std::move(s));
      } else if (t.type == TT::BlockBegin) {
        const Token& tag = peek();
        if (tag.type != TT::Name) fail_at(tag.line, "expected a statement name after '{%'");
        for (const char* e : ends) {
          if (tag.text == e) {
            i_ += 2;
            end = e;
            return body;
          }
        }
        i_ += 2;
        parse_statement(tag, body);
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  void parse_statement(const Token& tag, Body& body) {
    const std::string& n = tag.text;
    int line = tag.line;
    if (n == "if") return body.push_back(parse_if(line));
    if (n == "for") return body.push_back(parse_for(line));
    if (n == "set") return body.push_back(parse_set(line));
    if (n == "macro") return body.push_back(parse_macro(line));
    if (n == "call") return body.push_back(parse_call_block(line));
    if (n == "filter") return body.push_back(parse_filter_block(line));
    if (n == "with") return body.push_back(parse_with(line));
    if (n == "break" || n == "continue") {
      if (loop_depth_ == 0) fail_at(line, "'" + n + "' outside of a for loop");
      expect_block_end();
      return body.push_back(stmt(n == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, line));
    }
    if (n == "generation") {
      // HF's AssistantTracker tag: renders its body unchanged (it only records token spans).
      expect_block_end();
      std::string end;
      Body inner = parse_until({"endgeneration"}, end, line);
      expect_block_end();
      for (auto& s : inner) body.push_back(std::move(s));
      return;
    }
    static const std::set<std::string> closers = {"endif", "endfor", "endset", "endmacro", "endcall",
                                                  "endfilter", "endwith", "endgeneration", "elif",
                                                  "else", "endraw"};
    if (closers.count(n)) fail_at(line, "unexpected '" + n + "' (no open block it closes)");
    fail_at(line, "unsupported tag '" + n + "'");
  }

  StmtPtr parse_if(int line) {
    auto s = stmt(Stmt::Kind::If, line);
    ExprPtr cond = parse_expression();
    expect_block_end();
    while (true) {
      std::string end;
      Body body = parse_until({"elif", "else", "endif"}, end, line);
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") {
        cond = parse_expression();
        expect_block_end();
        continue;
      }
      expect_block_end();
      if (end == "else") {
        s->else_body = parse_until({"endif"}, end, line);
        expect_block_end();
      }
      return s;
    }
  }

  Target parse_target(bool allow_attr) {
    Target t;
    bool paren = accept_op("(");
    t.names.push_back(expect_name());
    if (allow_attr && !paren && accept_op(".")) {
      t.attr = expect_name();
      return t;
    }
    while (accept_op(",")) {
      if (paren && is_op(")")) break;
      if (cur().type != TT::Name) break;  // trailing comma
      t.names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    for (auto& n : t.names) bound_names_.insert(n);
    return t;
  }

  StmtPtr parse_for(int line) {
    auto s = stmt(Stmt::Kind::For, line);
    s->target = parse_target(false);
    if (!accept_name("in")) fail("expected 'in' in for loop, got " + describe(cur()));
    s->expr = parse_tuple(/*with_condexpr=*/false);
    if (accept_name("if")) s->cond = parse_expression();
    if (is_name("recursive")) fail("unsupported: recursive for loops");
    expect_block_end();
    ++loop_depth_;
    std::string end;
    s->body = parse_until({"else", "endfor"}, end, line);
    --loop_depth_;
    expect_block_end();
    if (end == "else") {
      s->else_body = parse_until({"endfor"}, end, line);
      expect_block_end();
    }
    return s;
  }

  StmtPtr parse_set(int line) {
    Target target = parse_target(true);
    if (accept_op("=")) {
      auto s = stmt(Stmt::Kind::Set, line);
      s->target = std::move(target);
      s->expr = parse_tuple();
      expect_block_end();
      return s;
    }
    auto s = stmt(Stmt::Kind::SetBlock, line);
    if (!target.attr.empty() || target.names.size() != 1) fail("block set needs a single name");
    s->target = std::move(target);
    s->expr = node(Expr::Kind::BodyValue, line);
    while (accept_op("|")) s->expr = parse_filter(std::move(s->expr));
    expect_block_end();
    std::string end;
    s->body = parse_until({"endset"}, end, line);
    expect_block_end();
    return s;
  }

  // `(a, b=default, ...)` of a macro or call block.
  void parse_params(MacroDef& m) {
    expect_op("(");
    while (!accept_op(")")) {
      if (!m.params.empty()) expect_op(",");
      if (accept_op(")")) break;
      std::string p = expect_name();
      bound_names_.insert(p);
      m.params.push_back(p);
      m.defaults.push_back(accept_op("=") ? parse_expression() : nullptr);
    }
  }

  StmtPtr parse_macro(int line) {
    auto s = stmt(Stmt::Kind::Macro, line);
    s->macro = std::make_shared<MacroDef>();
    s->macro->name = expect_name();
    bound_names_.insert(s->macro->name);
    parse_params(*s->macro);
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;
    std::string end;
    s->macro->body = parse_until({"endmacro"}, end, line);
    loop_depth_ = saved;
    accept_name(s->macro->name.c_str());
    expect_block_end();
    return s;
  }

  StmtPtr parse_call_block(int line) {
    auto s = stmt(Stmt::Kind::CallBlock, line);
    s->macro = std::make_shared<MacroDef>();
    s->macro->name = "caller";
    if (is_op("(")) parse_params(*s->macro);
    s->expr = parse_expression();
    if (s->expr->kind != Expr::Kind::Call) fail_at(line, "'call' block needs a macro call");
    expect_block_end();
    std::string end;
    s->macro->body = parse_until({"endcall"}, end, line);
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block(int line) {
    auto s = stmt(Stmt::Kind::FilterBlock, line);
    s->expr = node(Expr::Kind::BodyValue, line);
    s->expr = parse_filter(std::move(s->expr));
    while (accept_op("|")) s->expr = parse_filter(std::move(s->expr));
    expect_block_end();
    std::string end;
    s->body = parse_until({"endfilter"}, end, line);
    expect_block_end();
    return s;
  }

  StmtPtr parse_with(int line) {
    auto s = stmt(Stmt::Kind::With, line);
    while (cur().type != TT::BlockEnd) {
      if (!s->assigns.empty()) expect_op(",");
      std::string n = expect_name();
      bound_names_.insert(n);
      expect_op("=");
      s->assigns.emplace_back(n, parse_expression());
    }
    expect_block_end();
    std::string end;
    s->body = parse_until({"endwith"}, end, line);
    expect_block_end();
    return s;
  }

  // ---- expressions (jinja2's precedence, lowest first) ----

  ExprPtr parse_tuple(bool with_condexpr = true) {
    int line = cur().line;
    ExprPtr first = with_condexpr ? parse_expression() : parse_or();
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::TupleLit, line);
    t->args.push_back(std::move(first));
    while (accept_op(",")) {
      if (cur().type == TT::BlockEnd || cur().type == TT::VarEnd || is_name("if")) break;
      t->args.push_back(with_condexpr ? parse_expression() : parse_or());
    }
    return t;
  }

  ExprPtr parse_expression() {
    ExprPtr e = parse_or();
    while (is_name("if")) {
      int line = cur().line;
      ++i_;
      auto t = node(Expr::Kind::Ternary, line);
      t->a = parse_or();
      t->b = std::move(e);
      if (accept_name("else")) t->c = parse_expression();
      e = std::move(t);
    }
    return e;
  }

  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r, int line) {
    auto b = node(Expr::Kind::Binary, line);
    b->name = std::move(op);
    b->a = std::move(l);
    b->b = std::move(r);
    return b;
  }

  ExprPtr parse_or() {
    Deeper nest(*this);
    ExprPtr l = parse_and();
    while (is_name("or")) {
      nest.step();
      int line = t_[i_++].line;
      l = binary("or", std::move(l), parse_and(), line);
    }
    return l;
  }

  ExprPtr parse_and() {
    Deeper nest(*this);
    ExprPtr l = parse_not();
    while (is_name("and")) {
      nest.step();
      int line = t_[i_++].line;
      l = binary("and", std::move(l), parse_not(), line);
    }
    return l;
  }

  ExprPtr parse_not() {
    Deeper nest(*this);
    if (is_name("not")) {
      auto u = node(Expr::Kind::Unary, t_[i_++].line);
      u->name = "not";
      u->a = parse_not();
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
      if (cur().type == TT::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                   cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
        op = t_[i_++].text;
      } else if (is_name("in")) {
        ++i_;
        op = "in";
      } else if (is_name("not") && peek().type == TT::Name && peek().text == "in") {
        i_ += 2;
        op = "not in";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::Compare, line);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    Deeper nest(*this);
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      nest.step();
      const Token& t = t_[i_++];
      l = binary(t.text, std::move(l), parse_concat(), t.line);
    }
    return l;
  }

  ExprPtr parse_concat() {
    Deeper nest(*this);
    ExprPtr l = parse_math2();
    while (is_op("~")) {
      nest.step();
      int line = t_[i_++].line;
      l = binary("~", std::move(l), parse_math2(), line);
    }
    return l;
  }

  ExprPtr parse_math2() {
    Deeper nest(*this);
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      nest.step();
      const Token& t = t_[i_++];
      if (t.text == "%" && l->kind == Expr::Kind::Literal && l->value.is_string())
        fail_at(t.line, "unsupported: printf-style '%' string formatting");
      l = binary(t.text, std::move(l), parse_pow(), t.line);
    }
    return l;
  }

  ExprPtr parse_pow() {
    Deeper nest(*this);
    ExprPtr l = parse_unary(true);
    while (is_op("**")) {
      nest.step();
      int line = t_[i_++].line;
      l = binary("**", std::move(l), parse_unary(true), line);
    }
    return l;
  }

  ExprPtr parse_unary(bool with_filter) {
    Deeper nest(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      auto u = node(Expr::Kind::Unary, cur().line);
      u->name = t_[i_++].text;
      u->a = parse_unary(false);
      e = std::move(u);
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (!with_filter) return e;
    while (true) {
      nest.step();
      if (accept_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        ++i_;
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.type) {
      case TT::Name: {
        ++i_;
        auto lit = node(Expr::Kind::Literal, t.line);
        if (t.text == "true" || t.text == "True") { lit->value = Value(true); return lit; }
        if (t.text == "false" || t.text == "False") { lit->value = Value(false); return lit; }
        if (t.text == "none" || t.text == "None") { lit->value = Value::none(); return lit; }
        auto n = node(Expr::Kind::Name, t.line);
        n->name = t.text;
        return n;
      }
      case TT::String: {
        std::string v;
        while (cur().type == TT::String) v += t_[i_++].text;  // adjacent literals concatenate
        auto lit = node(Expr::Kind::Literal, t.line);
        lit->value = Value(std::move(v));
        return lit;
      }
      case TT::Int: {
        ++i_;
        auto lit = node(Expr::Kind::Literal, t.line);
        try {
          lit->value = Value(static_cast<int64_t>(std::stoll(t.text)));
        } catch (const std::exception&) {
          fail_at(t.line, "integer literal out of range: " + t.text);
        }
        return lit;
      }
      case TT::Float: {
        ++i_;
        auto lit = node(Expr::Kind::Literal, t.line);
        lit->value = Value(std::strtod(t.text.c_str(), nullptr));  // strtod: no throw on subnormals
        return lit;
      }
      case TT::Op:
        if (t.text == "(") {
          ++i_;
          if (accept_op(")")) return node(Expr::Kind::TupleLit, t.line);
          ExprPtr e = parse_expression();
          if (is_op(",")) {
            auto tup = node(Expr::Kind::TupleLit, t.line);
            tup->args.push_back(std::move(e));
            while (accept_op(",")) {
              if (is_op(")")) break;
              tup->args.push_back(parse_expression());
            }
            e = std::move(tup);
          }
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          ++i_;
          auto l = node(Expr::Kind::ListLit, t.line);
          while (!accept_op("]")) {
            if (!l->args.empty()) expect_op(",");
            if (accept_op("]")) break;
            l->args.push_back(parse_expression());
          }
          return l;
        }
        if (t.text == "{") {
          ++i_;
          auto d = node(Expr::Kind::DictLit, t.line);
          while (!accept_op("}")) {
            if (!d->args.empty()) expect_op(",");
            if (accept_op("}")) break;
            d->args.push_back(parse_expression());
            expect_op(":");
            d->args.push_back(parse_expression());
          }
          return d;
        }
        break;
      default: break;
    }
    fail("unexpected " + describe(t) + " in expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    Deeper nest(*this);
    while (true) {
      nest.step();
      if (is_op(".")) {
        int line = t_[i_++].line;
        if (cur().type == TT::Int) {
          auto it = node(Expr::Kind::Item, line);
          it->a = std::move(e);
          auto lit = node(Expr::Kind::Literal, line);
          const Token& idx = t_[i_++];
          errno = 0;
          long long v = std::strtoll(idx.text.c_str(), nullptr, 10);
          if (errno == ERANGE) fail_at(idx.line, "integer literal out of range: " + idx.text);
          lit->value = Value(static_cast<int64_t>(v));
          it->b = std::move(lit);
          e = std::move(it);
        } else {
          auto at = node(Expr::Kind::Attr, line);
          at->a = std::move(e);
          at->name = expect_name();
          e = std::move(at);
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
    int line = t_[i_++].line;  // '['
    ExprPtr parts[3];
    int n = 0;
    bool slice = false;
    while (true) {
      if (is_op(":")) {
        ++i_;
        slice = true;
        if (++n > 2) fail("too many ':' in slice");
        continue;
      }
      if (is_op("]")) break;
      if (parts[n]) fail("expected ':' or ']' in subscript");
      parts[n] = parse_expression();
    }
    expect_op("]");
    if (!slice) {
      if (!parts[0]) fail_at(line, "empty subscript");
      auto it = node(Expr::Kind::Item, line);
      it->a = std::move(obj);
      it->b = std::move(parts[0]);
      return it;
    }
    auto sl = node(Expr::Kind::Slice, line);
    sl->a = std::move(obj);
    for (auto& p : parts) sl->args.push_back(std::move(p));
    return sl;
  }

  void parse_args(Expr& call) {
    expect_op("(");
    bool first = true;
    while (!accept_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (accept_op(")")) break;
      if (is_op("*") || is_op("**")) fail("unsupported: *args / **kwargs in calls");
      if (cur().type == TT::Name && peek().type == TT::Op && peek().text == "=") {
        std::string k = t_[i_].text;
        i_ += 2;
        call.kwargs.emplace_back(k, parse_expression());
      } else {
        if (!call.kwargs.empty()) fail("positional argument follows keyword argument");
        call.args.push_back(parse_expression());
      }
    }
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto c = node(Expr::Kind::Call, cur().line);
    if (callee->kind == Expr::Kind::Name) {
      called_names_.emplace_back(callee->name, callee->line);
    } else if (callee->kind == Expr::Kind::Attr && !is_known_method(callee->name)) {
      fail_at(callee->line, "unsupported method '" + callee->name + "'");
    }
    c->a = std::move(callee);
    parse_args(*c);
    return c;
  }

  ExprPtr parse_filter(ExprPtr obj) {
    auto f = node(Expr::Kind::Filter, cur().line);
    f->name = expect_name();
    if (!find_filter(f->name)) fail_at(f->line, "unsupported filter '" + f->name + "'");
    f->a = std::move(obj);
    if (is_op("(")) parse_args(*f);
    return f;
  }

  ExprPtr parse_test(ExprPtr obj) {
    auto t = node(Expr::Kind::Test, cur().line);
    t->negated = accept_name("not");
    t->name = expect_name();
    if (!find_test(t->name)) fail_at(t->line, "unsupported test '" + t->name + "'");
    t->a = std::move(obj);
    if (is_op("(")) {
      parse_args(*t);
    } else {
      const Token& c = cur();
      bool arg_start = c.type == TT::String || c.type == TT::Int || c.type == TT::Float ||
                       (c.type == TT::Op && (c.text == "[" || c.text == "{")) ||
                       (c.type == TT::Name && c.text != "else" && c.text != "or" && c.text != "and" &&
                        c.text != "if" && c.text != "not" && c.text != "in" && c.text != "is");
      if (arg_start) t->args.push_back(parse_postfix(parse_primary()));
    }
    return t;
  }

  const std::vector<Token>& t_;
  const std::string& name_;
  size_t i_ = 0;
  int loop_depth_ = 0;
  std::set<std::string> bound_names_;
  std::vector<std::pair<std::string, int>> called_names_;
};

}  // namespace

Body parse(const std::vector<Token>& tokens, const std::string& name) { return Parser(tokens, name).run(); }

}  // namespace portllm::tok::jinja
