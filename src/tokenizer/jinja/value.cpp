#include "tokenizer/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/utf8.h"

namespace portllm::tok::jinja {

bool Value::is_namespace() const { return type == Type::Dict && dict->is_namespace; }

double Value::as_double() const {
  switch (type) {
    case Type::Int: return static_cast<double>(i);
    case Type::Float: return f;
    case Type::Bool: return b ? 1.0 : 0.0;
    default: throw TypeError(std::string("expected a number, got ") + type_name());
  }
}

int64_t Value::as_int() const {
  switch (type) {
    case Type::Int: return i;
    case Type::Bool: return b ? 1 : 0;
    default: throw TypeError(std::string("expected an integer, got ") + type_name());
  }
}

bool Value::truthy() const {
  switch (type) {
    case Type::Undefined:
    case Type::None: return false;
    case Type::Bool: return b;
    case Type::Int: return i != 0;
    case Type::Float: return f != 0.0;
    case Type::String: return !s.empty();
    case Type::List: return !list->empty();
    case Type::Dict: return dict->is_namespace || !dict->items.empty();
    case Type::Callable: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (type) {
    case Type::Undefined: return "undefined";
    case Type::None: return "NoneType";
    case Type::Bool: return "bool";
    case Type::Int: return "int";
    case Type::Float: return "float";
    case Type::String: return "str";
    case Type::List: return "list";
    case Type::Dict: return dict->is_namespace ? "Namespace" : "dict";
    case Type::Callable: return "function";
  }
  return "?";
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form, then laid out by Python's repr rules.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t epos = sci.find('e');
  int exp = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (size_t k = 0; k < epos; ++k)
    if (sci[k] != '.') digits += sci[k];
  std::string out;
  int decpt = exp + 1;  // position of the decimal point relative to the digits
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out = "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1, std::string::npos);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  if (neg) out.insert(0, 1, '-');
  return out;
}

static std::string repr_string(const std::string& s) {
  // Python picks single quotes unless the string has ' and no ".
  bool has_sq = s.find('\'') != std::string::npos, has_dq = s.find('"') != std::string::npos;
  char q = (has_sq && !has_dq) ? '"' : '\'';
  std::string out(1, q);
  for (char32_t c : utf8::decode(s)) {
    if (c == static_cast<char32_t>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned>(c));
      out += b;
    } else {
      utf8::append(out, c);
    }
  }
  out += q;
  return out;
}

namespace {

// Containers can hold themselves ({% set ns.x = ns %}, l.append(l)). Python prints a container
// met again inside itself as [...] or {...}; `open` holds the ones being printed.
void repr_into(const Value& v, std::string& out, std::vector<const void*>& open) {
  using T = Value::Type;
  if (v.type != T::List && v.type != T::Dict) {
    out += v.type == T::String ? repr_string(v.s) : v.str();
    return;
  }
  const void* id = v.type == T::List ? static_cast<const void*>(v.list.get()) : static_cast<const void*>(v.dict.get());
  if (std::find(open.begin(), open.end(), id) != open.end()) {
    out += v.type == T::List ? (v.tuple ? "(...)" : "[...]") : v.dict->is_namespace ? "<Namespace {...}>" : "{...}";
    return;
  }
  open.push_back(id);
  if (v.type == T::List) {
    out += v.tuple ? "(" : "[";
    for (size_t k = 0; k < v.list->size(); ++k) {
      if (k) out += ", ";
      repr_into((*v.list)[k], out, open);
    }
    if (v.tuple && v.list->size() == 1) out += ",";
    out += v.tuple ? ")" : "]";
  } else {
    out += v.dict->is_namespace ? "<Namespace {" : "{";
    bool first = true;
    for (auto& [k, x] : v.dict->items) {
      if (!first) out += ", ";
      first = false;
      out += repr_string(k) + ": ";
      repr_into(x, out, open);
    }
    out += v.dict->is_namespace ? "}>" : "}";
  }
  open.pop_back();
}

// Comparisons recurse into containers; a container that holds itself would recurse forever.
// Python raises RecursionError there; so do we, before the stack runs out.
constexpr int kMaxCompareDepth = 512;

}  // namespace

std::string Value::repr() const {
  std::string out;
  std::vector<const void*> open;
  repr_into(*this, out, open);
  return out;
}

std::string Value::str() const {
  switch (type) {
    case Type::Undefined: return "";
    case Type::None: return "None";
    case Type::Bool: return b ? "True" : "False";
    case Type::Int: return std::to_string(i);
    case Type::Float: return format_float(f);
    case Type::String: return s;
    case Type::Callable: return "<function " + fn->name + ">";
    default: return repr();
  }
}

static bool equals_at(const Value& a, const Value& b, int depth);

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }

static bool equals_at(const Value& a, const Value& b, int depth) {
  using T = Value::Type;
  if (depth > kMaxCompareDepth) throw TypeError("maximum recursion depth exceeded in comparison");
  if (a.is_number() && b.is_number()) {
    if (a.type != T::Float && b.type != T::Float) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case T::Undefined:
    case T::None: return true;
    case T::String: return a.s == b.s;
    case T::List: {
      if (a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equals_at((*a.list)[k], (*b.list)[k], depth + 1)) return false;
      return true;
    }
    case T::Dict: {
      if (a.dict == b.dict) return true;
      if (a.dict->is_namespace || b.dict->is_namespace) return false;
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (auto& [k, v] : a.dict->items) {
        auto* o = b.dict->find(k);
        if (!o || !equals_at(v, *o, depth + 1)) return false;
      }
      return true;
    }
    case T::Callable: return a.fn == b.fn;
    default: return false;
  }
}

static bool less_at(const Value& a, const Value& b, int depth);

bool less(const Value& a, const Value& b) { return less_at(a, b, 0); }

static bool less_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxCompareDepth) throw TypeError("maximum recursion depth exceeded in comparison");
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) return a.as_int() < b.as_int();
    return a.as_double() < b.as_double();
  }
  if (a.is_string() && b.is_string()) return a.s < b.s;  // UTF-8 byte order == code point order
  if (a.is_list() && b.is_list()) {
    auto &x = *a.list, &y = *b.list;
    for (size_t k = 0; k < x.size() && k < y.size(); ++k) {
      if (!equals_at(x[k], y[k], depth + 1)) return less_at(x[k], y[k], depth + 1);
    }
    return x.size() < y.size();
  }
  throw TypeError(std::string("'<' not supported between instances of '") + a.type_name() +
                  "' and '" + b.type_name() + "'");
}

const Value* Dict::find(std::string_view key) const {
  for (auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

Value* Dict::find(std::string_view key) {
  for (auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  if (auto* p = find(key)) {
    *p = std::move(v);
  } else {
    items.emplace_back(key, std::move(v));
  }
}

bool Dict::erase(std::string_view key) {
  for (auto it = items.begin(); it != items.end(); ++it) {
    if (it->first == key) {
      items.erase(it);
      return true;
    }
  }
  return false;
}

const Value* Args::kwarg(std::string_view name) const {
  for (auto& kv : kw)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

const Value* Args::get(size_t i, std::string_view name) const {
  if (i < pos.size()) return &pos[i];
  return kwarg(name);
}

Value from_json(const nlohmann::ordered_json& j) {
  using J = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case J::null: return Value::none();
    case J::boolean: return Value(j.get<bool>());
    case J::number_integer: return Value(j.get<int64_t>());
    case J::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case J::number_float: return Value(j.get<double>());
    case J::string: return Value(j.get_ref<const std::string&>());
    case J::array: {
      List l;
      l.reserve(j.size());
      for (auto& e : j) l.push_back(from_json(e));
      return Value(std::move(l));
    }
    case J::object: {
      auto d = make_dict();
      d->items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) d->items.emplace_back(it.key(), from_json(it.value()));
      return Value(std::move(d));
    }
    default: return Value::none();
  }
}

}  // namespace portllm::tok::jinja
