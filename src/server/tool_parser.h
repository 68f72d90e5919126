// Extracts tool calls from model output. Each model family writes calls in its own markup
// (tool_parser_qwen, tool_parser_deepseek_v3); this base class does the streaming part common to
// all: content before the first call marker is released as it arrives (a possible partial marker
// is held back), everything from the marker on is held and parsed at the end of the output. A
// block that does not parse stays content, so a malformed call is never lost.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace portllm::server {

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of the arguments object
};

class ToolParser {
 public:
  struct Result {
    std::string content;
    std::vector<ToolCall> calls;
  };
  virtual ~ToolParser() = default;

  // Streaming: returns the content that can be emitted now.
  std::string push(std::string_view text);
  // End of output: parses the held text.
  Result finish();
  // Whole-text convenience.
  Result parse(std::string_view text);

  // Text appended to the prompt to force a call (tool_choice required: any function; named:
  // that function). The model's output continues it, so it is also fed to push() first.
  virtual std::string forced_prefix(const std::string& function_name) const = 0;
  virtual std::string_view start_marker() const = 0;

 protected:
  // Parses `held` (which starts with start_marker()) into calls; text that is not part of a
  // valid call is appended to `content`.
  virtual void parse_calls(std::string_view held, std::vector<ToolCall>& calls, std::string& content) const = 0;

  // For markups of repeated begin...end blocks: hands each block's body to `parse`. Text between
  // blocks that is not blank, and a block `parse` rejects, is appended to `content`; the last
  // block may lack its end tag (output cut off by max_tokens).
  static void for_each_block(std::string_view held, std::string_view begin, std::string_view end,
                             const std::function<bool(std::string_view body)>& parse, std::string& content);

 private:
  std::string buf_;
  bool in_calls_ = false;
};

// "qwen" (also Hermes-style <tool_call> JSON), "qwen3_coder" (Qwen3-Coder / Qwen3.5 / Qwen3.6
// XML-like calls; `tools`, the request's tools array, types their parameters), "deepseek_v3".
// Throws portllm::Error otherwise.
std::unique_ptr<ToolParser> make_tool_parser(const std::string& name, const nlohmann::ordered_json& tools = nullptr);
// Picks the parser from the markup a chat template uses: "deepseek_v3", "qwen3_coder" or "qwen"
// (default).
std::string detect_tool_parser(const std::string& chat_template_source);
// A fresh OpenAI-style id, "call_" + 24 random alphanumerics.
std::string make_tool_call_id();

}  // namespace portllm::server
