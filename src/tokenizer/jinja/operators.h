// Python semantics of the binary and unary operators a template can use.
#pragma once
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace portllm::tok::jinja {

// + - * / // % ** ~ ; throws TypeError on type mismatch, undefined operands or division by zero.
Value binary_op(std::string_view op, const Value& a, const Value& b);
// == != < > <= >= in, not in
bool compare_op(std::string_view op, const Value& a, const Value& b);
Value negate(const Value& a);
bool contains(const Value& container, const Value& item);  // Python `item in container`

}  // namespace portllm::tok::jinja
