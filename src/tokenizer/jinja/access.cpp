// jinja2's attribute/item access and Python's iter()/len() over interpreter values.
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/utf8.h"

namespace portllm::tok::jinja {

Value get_attr(const Value& obj, const std::string& name) {
  // jinja2 tries the Python attribute, then the item; only dict keys exist as "attributes"
  // here (a missing one, like any attribute of any other value, is Undefined).
  if (obj.is_dict()) {
    if (const Value* v = obj.dict->find(name)) return *v;
  }
  return Value();
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.dict->find(key.s)) return *v;
    }
    return Value();
  }
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      int64_t n = static_cast<int64_t>(obj.list->size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value();
      return (*obj.list)[static_cast<size_t>(i)];
    }
    std::u32string cps = utf8::decode(obj.s);
    int64_t n = static_cast<int64_t>(cps.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value();
    return Value(utf8::encode(cps.substr(static_cast<size_t>(i), 1)));
  }
  if (key.is_string()) return get_attr(obj, key.s);
  return Value();
}

List iterate(const Value& v) {
  switch (v.type) {
    case Value::Type::List: return *v.list;
    case Value::Type::Dict: {
      List keys;
      keys.reserve(v.dict->items.size());
      for (auto& kv : v.dict->items) keys.emplace_back(kv.first);
      return keys;
    }
    case Value::Type::String: {
      List chars;
      for (char32_t c : utf8::decode(v.s)) chars.emplace_back(utf8::encode(std::u32string(1, c)));
      return chars;
    }
    case Value::Type::Undefined: return {};
    default: throw TypeError(std::string("'") + v.type_name() + "' object is not iterable");
  }
}

size_t py_len(const Value& v) {
  switch (v.type) {
    case Value::Type::List: return v.list->size();
    case Value::Type::Dict: return v.dict->items.size();
    case Value::Type::String: return utf8::length(v.s);
    case Value::Type::Undefined: return 0;
    default: throw TypeError(std::string("object of type '") + v.type_name() + "' has no len()");
  }
}

}  // namespace portllm::tok::jinja
