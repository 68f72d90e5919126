// Qwen3-Coder / Qwen3.5 / Qwen3.6 tool calls (vLLM's "qwen3_coder"), XML-like:
//   <tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>
// A parameter's text is its value as the chat template printed it: strings raw, everything else
// as JSON. So the request's tool schema decides: a "string" parameter stays text, any other
// declared type is read as JSON (kept as text if it does not parse), and an undeclared one
// stays text, as vLLM does.
#pragma once
#include <nlohmann/json.hpp>

#include "server/tool_parser.h"

namespace portllm::server {

class Qwen3CoderToolParser : public ToolParser {
 public:
  // tools: the request's "tools" array (null: no schemas, every value stays text).
  explicit Qwen3CoderToolParser(nlohmann::ordered_json tools = nullptr) : tools_(std::move(tools)) {}
  std::string forced_prefix(const std::string& function_name) const override;
  std::string_view start_marker() const override { return "<tool_call>"; }

 protected:
  void parse_calls(std::string_view held, std::vector<ToolCall>& calls, std::string& content) const override;

 private:
  // The JSON-schema type of `param` of function `fn` ("" when the request does not declare it).
  std::string param_type(const std::string& fn, const std::string& param) const;
  bool parse_call(std::string_view body, ToolCall& call) const;

  nlohmann::ordered_json tools_;
};

}  // namespace portllm::server
