// Token stream -> syntax tree. Everything the interpreter does not implement (an unknown tag,
// filter, test, method or function) is rejected here, at load, with the template line.
#pragma once
#include <string>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace portllm::tok::jinja {

Body parse(const std::vector<Token>& tokens, const std::string& name);

}  // namespace portllm::tok::jinja
