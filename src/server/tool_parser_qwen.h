// Qwen2.5/Qwen3 (Hermes-style) tool calls:
//   <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
// repeated for parallel calls.
#pragma once
#include "server/tool_parser.h"

namespace portllm::server {

class QwenToolParser : public ToolParser {
 public:
  std::string forced_prefix(const std::string& function_name) const override;
  std::string_view start_marker() const override { return "<tool_call>"; }

 protected:
  void parse_calls(std::string_view held, std::vector<ToolCall>& calls, std::string& content) const override;
};

}  // namespace portllm::server
