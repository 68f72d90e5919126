#include "server/tool_parser_qwen.h"

#include <nlohmann/json.hpp>

namespace portllm::server {

namespace {
constexpr std::string_view kBegin = "<tool_call>", kEnd = "</tool_call>";
}  // namespace

std::string QwenToolParser::forced_prefix(const std::string& name) const {
  if (name.empty()) return "<tool_call>\n{\"name\": \"";
  return "<tool_call>\n{\"name\": " + nlohmann::json(name).dump() + ", \"arguments\": ";
}

void QwenToolParser::parse_calls(std::string_view held, std::vector<ToolCall>& calls, std::string& content) const {
  for_each_block(held, kBegin, kEnd, [&](std::string_view json_text) {
    try {
      auto j = nlohmann::ordered_json::parse(json_text);
      if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
      ToolCall c;
      c.name = j["name"].get<std::string>();
      auto args = j.contains("arguments") ? j["arguments"] : (j.contains("parameters") ? j["parameters"] : nlohmann::ordered_json::object());
      c.arguments = args.is_string() ? args.get<std::string>() : args.dump();
      calls.push_back(std::move(c));
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }, content);
}

}  // namespace portllm::server
