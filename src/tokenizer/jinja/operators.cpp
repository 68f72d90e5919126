#include "tokenizer/jinja/operators.h"

#include <cmath>

namespace portllm::tok::jinja {
namespace {

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined() || b.is_undefined())
    throw TypeError("undefined value used with operator '" + std::string(op) + "'");
  throw TypeError("unsupported operand type(s) for " + std::string(op) + ": '" + a.type_name() + "' and '" +
                  b.type_name() + "'");
}

bool both_int(const Value& a, const Value& b) {
  return (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
}

// Python ints are unbounded; ours are 64-bit, so overflow is an error rather than a wrap.
[[noreturn]] void overflow() { throw TypeError("integer overflow (result exceeds 64 bits)"); }
int64_t add_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
int64_t sub_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) overflow();
  return r;
}
int64_t mul_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

Value repeat(const Value& seq, int64_t n) {
  size_t unit = seq.is_string() ? seq.s.size() : seq.list->size();
  if (n > 0 && unit > 0 && static_cast<uint64_t>(n) > (size_t{1} << 28) / unit)
    throw TypeError("sequence repetition result too large");
  if (seq.is_string()) {
    std::string out;
    for (int64_t k = 0; k < n; ++k) out += seq.s;
    return Value(std::move(out));
  }
  List out;
  for (int64_t k = 0; k < n; ++k) out.insert(out.end(), seq.list->begin(), seq.list->end());
  return Value(std::move(out));
}

int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Value binary_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "~") return Value(a.str() + b.str());
  if (op == "+") {
    if (both_int(a, b)) return Value(add_checked(a.as_int(), b.as_int()));
    if (a.is_number() && b.is_number()) return Value(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) return Value(a.s + b.s);
    if (a.is_list() && b.is_list()) {
      List out = *a.list;
      out.insert(out.end(), b.list->begin(), b.list->end());
      return Value(std::move(out));
    }
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (both_int(a, b)) return Value(sub_checked(a.as_int(), b.as_int()));
    if (a.is_number() && b.is_number()) return Value(a.as_double() - b.as_double());
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (both_int(a, b)) return Value(mul_checked(a.as_int(), b.as_int()));
    if (a.is_number() && b.is_number()) return Value(a.as_double() * b.as_double());
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
    unsupported(op, a, b);
  }
  if (op == "/" || op == "//" || op == "%") {
    if (!a.is_number() || !b.is_number()) {
      if (op == "%" && a.is_string()) throw TypeError("unsupported: printf-style '%' string formatting");
      unsupported(op, a, b);
    }
    if (b.as_double() == 0.0) throw TypeError(op == "%" ? "modulo by zero" : "division by zero");
    if (op == "/") return Value(a.as_double() / b.as_double());
    if (both_int(a, b)) {
      int64_t x = a.as_int(), y = b.as_int();
      if (op == "//") return Value(floordiv(x, y));
      return Value(x - floordiv(x, y) * y);
    }
    double x = a.as_double(), y = b.as_double();
    if (op == "//") return Value(std::floor(x / y));
    double m = std::fmod(x, y);
    if (m != 0.0 && ((m < 0) != (y < 0))) m += y;
    return Value(m);
  }
  if (op == "**") {
    if (!a.is_number() || !b.is_number()) unsupported(op, a, b);
    if (both_int(a, b) && b.as_int() >= 0) {
      int64_t r = 1, base = a.as_int();
      for (int64_t e = b.as_int(); e > 0; e >>= 1) {  // square-and-multiply
        if (e & 1) r = mul_checked(r, base);
        if (e > 1) base = mul_checked(base, base);
      }
      return Value(r);
    }
    return Value(std::pow(a.as_double(), b.as_double()));
  }
  throw TypeError("unknown operator '" + std::string(op) + "'");
}

bool contains(const Value& c, const Value& item) {
  switch (c.type) {
    case Value::Type::String:
      if (!item.is_string()) throw TypeError("'in <string>' requires string as left operand");
      return c.s.find(item.s) != std::string::npos;
    case Value::Type::List:
      for (auto& e : *c.list)
        if (equals(e, item)) return true;
      return false;
    case Value::Type::Dict:
      return item.is_string() && c.dict->find(item.s) != nullptr;
    case Value::Type::Undefined:
      return false;
    default:
      throw TypeError(std::string("argument of type '") + c.type_name() + "' is not iterable");
  }
}

bool compare_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "<") return less(a, b);
  if (op == ">") return less(b, a);
  if (op == "<=") return !less(b, a);
  if (op == ">=") return !less(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  throw TypeError("unknown comparison '" + std::string(op) + "'");
}

Value negate(const Value& a) {
  if (a.is_int() || a.is_bool()) return Value(-a.as_int());
  if (a.is_float()) return Value(-a.f);
  throw TypeError(std::string("bad operand type for unary -: '") + a.type_name() + "'");
}

}  // namespace portllm::tok::jinja
