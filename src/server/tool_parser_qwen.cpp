#include "server/tool_parser_qwen.h"

#include <nlohmann/json.hpp>

namespace portllm::server {

namespace {
constexpr std::string_view kBegin = "<tool_call>", kEnd = "</tool_call>";

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }
}  // namespace

std::string QwenToolParser::forced_prefix(const std::string& name) const {
  if (name.empty()) return "<tool_call>\n{\"name\": \"";
  return "<tool_call>\n{\"name\": " + nlohmann::json(name).dump() + ", \"arguments\": ";
}

void QwenToolParser::parse_calls(std::string_view held, std::vector<ToolCall>& calls, std::string& content) const {
  size_t pos = 0;
  while (pos < held.size()) {
    size_t b = held.find(kBegin, pos);
    if (b == std::string_view::npos) {
      if (!is_blank(held.substr(pos))) content.append(held.substr(pos));
      return;
    }
    if (!is_blank(held.substr(pos, b - pos))) content.append(held.substr(pos, b - pos));
    size_t body = b + kBegin.size();
    size_t e = held.find(kEnd, body);
    // A call cut off by max_tokens has no end tag: try the rest as its body.
    std::string_view json_text = held.substr(body, e == std::string_view::npos ? std::string_view::npos : e - body);
    size_t next = e == std::string_view::npos ? held.size() : e + kEnd.size();
    bool ok = false;
    try {
      auto j = nlohmann::ordered_json::parse(json_text);
      if (j.is_object() && j.contains("name") && j["name"].is_string()) {
        ToolCall c;
        c.name = j["name"].get<std::string>();
        auto args = j.contains("arguments") ? j["arguments"] : (j.contains("parameters") ? j["parameters"] : nlohmann::ordered_json::object());
        c.arguments = args.is_string() ? args.get<std::string>() : args.dump();
        calls.push_back(std::move(c));
        ok = true;
      }
    } catch (const std::exception&) {
    }
    if (!ok) content.append(held.substr(b, next - b));
    pos = next;
  }
}

}  // namespace portllm::server
