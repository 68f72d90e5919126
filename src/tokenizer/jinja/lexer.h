// Template source -> token stream, with jinja2's whitespace rules as HF configures them
// (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False) and `-`/`+` tag modifiers
// applied here, so the parser only sees text and tag tokens.
#pragma once
#include <string>
#include <vector>

namespace portllm::tok::jinja {

struct Token {
  enum class Type { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
  Type type;
  std::string text;  // Text: the literal text; String: the unescaped value; Name/Op/Int/Float: spelling
  int line;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws portllm::Error("<name>:<line>: ...") on malformed tags or literals.
std::vector<Token> lex(const std::string& source, const std::string& name, const LexOptions& opt = {});

}  // namespace portllm::tok::jinja
