// Code-point helpers: Python strings index, slice, measure and case-map by code point, while the
// interpreter stores UTF-8. These keep `s[::-1]`, `s|length`, `s.upper()` Python-exact.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace portllm::tok::jinja::utf8 {

std::u32string decode(std::string_view s);  // invalid bytes map to U+FFFD
std::string encode(std::u32string_view s);
void append(std::string& out, char32_t cp);
size_t length(std::string_view s);  // number of code points

bool is_space(char32_t c);  // Python str.isspace()
char32_t lower(char32_t c);
char32_t upper(char32_t c);
bool is_lower_cased(char32_t c);  // has case and is lowercase
bool is_upper_cased(char32_t c);
bool is_alnum(char32_t c);

std::string to_lower(std::string_view s);
std::string to_upper(std::string_view s);

}  // namespace portllm::tok::jinja::utf8
