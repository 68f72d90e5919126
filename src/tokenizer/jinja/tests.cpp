// jinja2's builtin tests (`x is defined`, `n is divisibleby 3`, ...).
#include <map>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/operators.h"
#include "tokenizer/jinja/utf8.h"

namespace portllm::tok::jinja {
namespace {

const Value& arg0(const Args& a, const char* test) {
  if (a.pos.empty()) throw TypeError(std::string("test '") + test + "' needs an argument");
  return a.pos[0];
}

bool t_defined(const Value& v, const Args&) { return !v.is_undefined(); }
bool t_undefined(const Value& v, const Args&) { return v.is_undefined(); }
bool t_none(const Value& v, const Args&) { return v.is_none(); }
bool t_string(const Value& v, const Args&) { return v.is_string(); }
bool t_number(const Value& v, const Args&) { return v.is_number(); }
bool t_integer(const Value& v, const Args&) { return v.is_int(); }
bool t_float(const Value& v, const Args&) { return v.is_float(); }
bool t_mapping(const Value& v, const Args&) { return v.is_dict() && !v.dict->is_namespace; }
bool t_iterable(const Value& v, const Args&) {
  return v.is_string() || v.is_list() || (v.is_dict() && !v.dict->is_namespace) || v.is_undefined();
}
bool t_sequence(const Value& v, const Args&) {
  return v.is_string() || v.is_list() || (v.is_dict() && !v.dict->is_namespace);
}
bool t_boolean(const Value& v, const Args&) { return v.is_bool(); }
bool t_true(const Value& v, const Args&) { return v.is_bool() && v.b; }
bool t_false(const Value& v, const Args&) { return v.is_bool() && !v.b; }
bool t_callable(const Value& v, const Args&) { return v.is_callable(); }
bool t_eq(const Value& v, const Args& a) { return equals(v, arg0(a, "eq")); }
bool t_ne(const Value& v, const Args& a) { return !equals(v, arg0(a, "ne")); }
bool t_lt(const Value& v, const Args& a) { return less(v, arg0(a, "lt")); }
bool t_le(const Value& v, const Args& a) { return !less(arg0(a, "le"), v); }
bool t_gt(const Value& v, const Args& a) { return less(arg0(a, "gt"), v); }
bool t_ge(const Value& v, const Args& a) { return !less(v, arg0(a, "ge")); }
bool t_in(const Value& v, const Args& a) { return contains(arg0(a, "in"), v); }

// Python `is`: identity for objects, value identity for None/bools/small scalars.
bool t_sameas(const Value& v, const Args& a) {
  const Value& o = arg0(a, "sameas");
  if (v.type != o.type) return false;
  switch (v.type) {
    case Value::Type::List: return v.list == o.list;
    case Value::Type::Dict: return v.dict == o.dict;
    case Value::Type::Callable: return v.fn == o.fn;
    default: return equals(v, o);
  }
}

bool t_odd(const Value& v, const Args&) { return v.as_int() % 2 != 0; }
bool t_even(const Value& v, const Args&) { return v.as_int() % 2 == 0; }
bool t_divisibleby(const Value& v, const Args& a) {
  int64_t d = arg0(a, "divisibleby").as_int();
  if (d == 0) throw TypeError("divisibleby 0");
  return v.as_int() % d == 0;
}

bool t_lower(const Value& v, const Args&) {
  bool found = false;
  return call_method(Value(v.str()), "islower", Args{}, found).b;
}
bool t_upper(const Value& v, const Args&) {
  bool found = false;
  return call_method(Value(v.str()), "isupper", Args{}, found).b;
}
bool t_escaped(const Value&, const Args&) { return false; }
bool t_filter(const Value& v, const Args&) { return v.is_string() && find_filter(v.s); }
bool t_test(const Value& v, const Args&) { return v.is_string() && find_test(v.s); }

const std::map<std::string, TestFn, std::less<>>& registry() {
  static const std::map<std::string, TestFn, std::less<>> r = {
      {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none},
      {"string", t_string},   {"number", t_number},       {"integer", t_integer},
      {"float", t_float},     {"mapping", t_mapping},     {"iterable", t_iterable},
      {"sequence", t_sequence}, {"boolean", t_boolean},   {"true", t_true},
      {"false", t_false},     {"callable", t_callable},   {"eq", t_eq},
      {"equalto", t_eq},      {"==", t_eq},               {"ne", t_ne},
      {"!=", t_ne},           {"lt", t_lt},               {"lessthan", t_lt},
      {"<", t_lt},            {"le", t_le},               {"<=", t_le},
      {"gt", t_gt},           {"greaterthan", t_gt},      {">", t_gt},
      {"ge", t_ge},           {">=", t_ge},               {"in", t_in},
      {"sameas", t_sameas},   {"odd", t_odd},             {"even", t_even},
      {"divisibleby", t_divisibleby}, {"lower", t_lower}, {"upper", t_upper},
      {"escaped", t_escaped}, {"filter", t_filter},       {"test", t_test},
  };
  return r;
}

}  // namespace

const TestFn* find_test(std::string_view name) {
  auto& r = registry();
  auto it = r.find(name);
  return it == r.end() ? nullptr : &it->second;
}

bool apply_test(std::string_view name, const Value& v, const Args& args) {
  const TestFn* t = find_test(name);
  if (!t) throw TypeError("unknown test '" + std::string(name) + "'");
  return (*t)(v, args);
}

}  // namespace portllm::tok::jinja
