#include "server/tool_parser_deepseek_v3.h"

#include <nlohmann/json.hpp>

namespace portllm::server {

namespace {
// U+FF5C FULLWIDTH VERTICAL LINE and U+2581 LOWER ONE EIGHTH BLOCK, as in the tokenizer.
constexpr std::string_view kCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Arguments: the JSON object, either bare (V3.1) or inside a ```json fence (V3).
bool parse_args(std::string_view text, std::string& out) {
  text = trim(text);
  if (text.substr(0, 3) == "```") {
    size_t nl = text.find('\n');
    size_t close = text.rfind("```");
    if (nl == std::string_view::npos || close == std::string_view::npos || close <= nl) return false;
    text = trim(text.substr(nl + 1, close - nl - 1));
  }
  try {
    auto j = nlohmann::ordered_json::parse(text);
    if (!j.is_object()) return false;
    out = j.dump();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool parse_one(std::string_view body, ToolCall& c) {
  size_t sep = body.find(kSep);
  if (sep == std::string_view::npos) return false;
  std::string_view head = trim(body.substr(0, sep)), rest = body.substr(sep + kSep.size());
  if (head == "function") {  // V3: the name is the first line after the separator
    size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) return false;
    c.name = std::string(trim(rest.substr(0, nl)));
    rest = rest.substr(nl + 1);
  } else {
    c.name = std::string(head);
  }
  return !c.name.empty() && parse_args(rest, c.arguments);
}
}  // namespace

std::string_view DeepSeekV3ToolParser::start_marker() const { return kCallsBegin; }

std::string DeepSeekV3ToolParser::forced_prefix(const std::string& name) const {
  std::string p = std::string(kCallsBegin) + std::string(kCallBegin) + "function" + std::string(kSep);
  if (!name.empty()) p += name + "\n```json\n";
  return p;
}

void DeepSeekV3ToolParser::parse_calls(std::string_view held, std::vector<ToolCall>& calls, std::string& content) const {
  std::string_view rest = held.substr(kCallsBegin.size());
  size_t end_all = rest.find(kCallsEnd);
  std::string_view tail;
  if (end_all != std::string_view::npos) {
    tail = rest.substr(end_all + kCallsEnd.size());
    rest = rest.substr(0, end_all);
  }
  size_t pos = 0;
  bool all_ok = true;
  std::vector<ToolCall> found;
  while (true) {
    size_t b = rest.find(kCallBegin, pos);
    if (b == std::string_view::npos) {
      if (!trim(rest.substr(pos)).empty()) all_ok = false;
      break;
    }
    size_t body = b + kCallBegin.size();
    size_t e = rest.find(kCallEnd, body);
    std::string_view text = rest.substr(body, e == std::string_view::npos ? std::string_view::npos : e - body);
    ToolCall c;
    if (parse_one(text, c)) found.push_back(std::move(c));
    else all_ok = false;
    if (e == std::string_view::npos) break;
    pos = e + kCallEnd.size();
  }
  if (found.empty() && !all_ok) {
    content.append(held);  // nothing usable: keep the raw text
    return;
  }
  for (auto& c : found) calls.push_back(std::move(c));
  if (!trim(tail).empty()) content.append(tail);
}

}  // namespace portllm::server
