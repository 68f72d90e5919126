// Helpers shared by the jinja tests: render a template string with JSON variables.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/interpreter.h"

namespace portllm::tok::jinja::testing {

inline std::string render(const std::string& src, const std::string& vars_json = "{}") {
  Template t(src, "test");
  std::vector<std::pair<std::string, Value>> vars;
  auto j = nlohmann::ordered_json::parse(vars_json);
  for (auto it = j.begin(); it != j.end(); ++it) vars.emplace_back(it.key(), from_json(it.value()));
  return t.render(vars);
}

// One table-driven case. Expectations follow jinja2 3.1 semantics in HF's chat-template
// environment (trim_blocks, lstrip_blocks, loopcontrols, tojson = json.dumps(ensure_ascii=False)).
struct Case {
  const char* name;
  const char* tmpl;
  const char* vars;
  const char* expected;
};

}  // namespace portllm::tok::jinja::testing
