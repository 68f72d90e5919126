// Python str operations shared by string methods and filters.
#pragma once
#include <string>
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace portllm::tok::jinja::pystr {

// str.strip/lstrip/rstrip; chars == nullptr strips whitespace.
std::string strip(const std::string& s, const std::string* chars, bool left, bool right);
// str.split / str.rsplit; sep == nullptr splits on whitespace runs.
List split(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right);
std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count);
int64_t count(const std::string& s, const std::string& sub);
std::string title(const std::string& s);       // str.title()
std::string capitalize(const std::string& s);  // str.capitalize()
// str.format with {} / {0} / {name} fields (no format specs).
std::string format(const std::string& fmt, const Args& args);
// Python slice of a code-point sequence or list: returns selected indices.
std::vector<size_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step);

}  // namespace portllm::tok::jinja::pystr
