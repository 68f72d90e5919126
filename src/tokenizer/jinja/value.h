// Runtime values of the Jinja interpreter. They model the Python objects a chat template sees
// (jinja2 runs on Python): None, bool, int, float, str, list, dict (insertion-ordered), plus
// jinja2's Undefined and callables (macros, builtins, namespace objects are dicts with a flag).
// Lists and dicts are shared by reference, as in Python, so `list.append` inside a `set` and
// `ns.x = ...` are visible through every name bound to the same object.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace portllm::tok::jinja {

struct Value;
struct Dict;
struct Args;
using List = std::vector<Value>;

// A Python-level error inside a filter/method/builtin (TypeError, ValueError...). The
// interpreter adds the template name and line when it propagates.
struct TypeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// raise_exception(msg) from the template: surfaces to the caller with exactly msg.
struct TemplateRaise : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Callable {
  std::string name;
  std::function<Value(const Args&)> fn;
};

// A list or dict made while a render runs on this thread is tracked, so that the render can free
// the ones only reference cycles keep alive (render_arena.h).
void track_container(const std::shared_ptr<List>& l);
void track_container(const std::shared_ptr<Dict>& d);

struct Value {
  enum class Type : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

  Type type = Type::Undefined;
  bool tuple = false;  // a List that Python would hold as a tuple (prints as (a, b))
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;
  std::shared_ptr<Callable> fn;

  Value() = default;
  static Value none() { Value v; v.type = Type::None; return v; }
  Value(bool x) : type(Type::Bool), b(x) {}
  Value(int x) : type(Type::Int), i(x) {}
  Value(int64_t x) : type(Type::Int), i(x) {}
  Value(double x) : type(Type::Float), f(x) {}
  Value(std::string x) : type(Type::String), s(std::move(x)) {}
  Value(const char* x) : type(Type::String), s(x) {}
  Value(std::string_view x) : type(Type::String), s(x) {}
  Value(List x) : type(Type::List), list(std::make_shared<List>(std::move(x))) { track_container(list); }
  static Value make_tuple(List x) {
    Value v(std::move(x));
    v.tuple = true;
    return v;
  }
  Value(std::shared_ptr<Dict> d) : type(Type::Dict), dict(std::move(d)) {}
  Value(std::shared_ptr<Callable> c) : type(Type::Callable), fn(std::move(c)) {}

  bool is_undefined() const { return type == Type::Undefined; }
  bool is_none() const { return type == Type::None; }
  bool is_string() const { return type == Type::String; }
  bool is_list() const { return type == Type::List; }
  bool is_dict() const { return type == Type::Dict; }
  bool is_int() const { return type == Type::Int; }
  bool is_float() const { return type == Type::Float; }
  bool is_bool() const { return type == Type::Bool; }
  // Python numbers: bool is an int subclass.
  bool is_number() const { return type == Type::Int || type == Type::Float || type == Type::Bool; }
  bool is_callable() const { return type == Type::Callable; }
  bool is_namespace() const;

  double as_double() const;     // numbers only
  int64_t as_int() const;       // int/bool only
  bool truthy() const;          // Python truthiness; Undefined is false
  std::string str() const;      // Python str(); Undefined -> ""
  std::string repr() const;     // Python repr() (used for str() of containers)
  const char* type_name() const;
};

// Insertion-ordered string-keyed dict. Linear lookup: chat-template dicts have a handful of keys.
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;

  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(const std::string& key, Value v);
  bool erase(std::string_view key);
};

inline std::shared_ptr<Dict> make_dict() {
  auto d = std::make_shared<Dict>();
  track_container(d);
  return d;
}

// Positional and keyword arguments of a call.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;

  // Argument by position `i` or keyword `name` (Python signature binding); nullptr if absent.
  const Value* get(size_t i, std::string_view name) const;
  const Value* kwarg(std::string_view name) const;
};

bool equals(const Value& a, const Value& b);
// Python ordering (<); throws TypeError for unorderable types.
bool less(const Value& a, const Value& b);

// Python repr of a float (shortest round-trip, 'e' notation outside [1e-4, 1e16)).
std::string format_float(double d);

Value from_json(const nlohmann::ordered_json& j);

struct JsonDumpOptions {
  int indent = -1;  // < 0: compact
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_sep;  // defaults as Python: ", " compact, "," with indent
  std::string key_sep = ": ";
};
// Python json.dumps.
std::string to_json(const Value& v, const JsonDumpOptions& opt);

}  // namespace portllm::tok::jinja
