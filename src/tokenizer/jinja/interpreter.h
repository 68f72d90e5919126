// A parsed Jinja template and its renderer. Parsing happens in the constructor, so anything
// unsupported fails at load; render() walks the tree with jinja2's scoping rules (for loops and
// macros open scopes, if does not) and Python value semantics.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace portllm::tok::jinja {

class Template {
 public:
  // Throws portllm::Error("<name>:<line>: ...") for syntax errors and unsupported constructs.
  Template(const std::string& source, std::string name, const LexOptions& opt = {});

  // `vars` become the template's global variables. Runtime errors throw portllm::Error naming
  // the template line; raise_exception(msg) throws portllm::Error(msg) unchanged.
  std::string render(const std::vector<std::pair<std::string, Value>>& vars) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  Body body_;
};

}  // namespace portllm::tok::jinja
