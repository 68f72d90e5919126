// DeepSeek-V3 tool calls (special tokens of its tokenizer):
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//   ```json
//   {"arg": 1}
//   ```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
// and the V3.1 variant <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{"arg": 1}<｜tool▁call▁end｜>.
#pragma once
#include "server/tool_parser.h"

namespace portllm::server {

class DeepSeekV3ToolParser : public ToolParser {
 public:
  std::string forced_prefix(const std::string& function_name) const override;
  std::string_view start_marker() const override;

 protected:
  void parse_calls(std::string_view held, std::vector<ToolCall>& calls, std::string& content) const override;
};

}  // namespace portllm::server
