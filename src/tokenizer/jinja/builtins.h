// Registries of the filters, tests, methods and global functions the interpreter implements.
// The parser consults them so an unknown name fails when the template is loaded.
#pragma once
#include <string>
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace portllm::tok::jinja {

using FilterFn = Value (*)(const Value& v, const Args& args);
using TestFn = bool (*)(const Value& v, const Args& args);

const FilterFn* find_filter(std::string_view name);  // nullptr if unknown
const TestFn* find_test(std::string_view name);

// Python methods on str/list/dict values (`s.startswith(x)`, `d.items()`, `l.append(x)`).
bool is_known_method(std::string_view name);
// Calls obj.name(args); sets `found` false when obj's type has no such method.
Value call_method(const Value& obj, const std::string& name, const Args& args, bool& found);

// Global functions every template sees: range, namespace, dict, raise_exception, strftime_now.
bool is_known_global_function(std::string_view name);
Value make_global_function(std::string_view name);

// Shared helpers.
Value apply_filter(std::string_view name, const Value& v, const Args& args);  // throws if unknown
bool apply_test(std::string_view name, const Value& v, const Args& args);
Value get_attr(const Value& obj, const std::string& name);  // jinja2 getattr: key, else Undefined
Value get_item(const Value& obj, const Value& key);         // jinja2 getitem: index/key
List iterate(const Value& v);                               // Python iter(): str chars, dict keys
size_t py_len(const Value& v);

}  // namespace portllm::tok::jinja
