#include "server/tool_parser.h"

#include <random>

#include "core/error.h"
#include "server/reasoning_parser.h"
#include "server/tool_parser_deepseek_v3.h"
#include "server/tool_parser_qwen.h"
#include "server/tool_parser_qwen3_coder.h"

namespace portllm::server {

std::string ToolParser::push(std::string_view text) {
  buf_.append(text);
  if (in_calls_) return {};
  size_t pos = buf_.find(start_marker());
  if (pos != std::string::npos) {
    std::string out = buf_.substr(0, pos);
    buf_.erase(0, pos);
    in_calls_ = true;
    return out;
  }
  size_t hold = partial_tag_suffix(buf_, start_marker());
  std::string out = buf_.substr(0, buf_.size() - hold);
  buf_.erase(0, buf_.size() - hold);
  return out;
}

void ToolParser::for_each_block(std::string_view held, std::string_view begin, std::string_view end,
                                const std::function<bool(std::string_view)>& parse, std::string& content) {
  auto is_blank = [](std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; };
  size_t pos = 0;
  while (pos < held.size()) {
    const size_t b = held.find(begin, pos);
    if (b == std::string_view::npos) {
      if (!is_blank(held.substr(pos))) content.append(held.substr(pos));
      return;
    }
    if (!is_blank(held.substr(pos, b - pos))) content.append(held.substr(pos, b - pos));
    const size_t body = b + begin.size(), e = held.find(end, body);
    const size_t body_end = e == std::string_view::npos ? held.size() : e;
    const size_t next = e == std::string_view::npos ? held.size() : e + end.size();
    if (!parse(held.substr(body, body_end - body))) content.append(held.substr(b, next - b));
    pos = next;
  }
}

ToolParser::Result ToolParser::finish() {
  Result r;
  if (in_calls_) parse_calls(buf_, r.calls, r.content);
  else r.content = buf_;
  buf_.clear();
  in_calls_ = false;
  return r;
}

ToolParser::Result ToolParser::parse(std::string_view text) {
  std::string head = push(text);
  Result r = finish();
  r.content = head + r.content;
  return r;
}

std::unique_ptr<ToolParser> make_tool_parser(const std::string& name, const nlohmann::ordered_json& tools) {
  if (name == "qwen" || name == "qwen25" || name == "hermes") return std::make_unique<QwenToolParser>();
  if (name == "qwen3_coder" || name == "qwen3_xml") return std::make_unique<Qwen3CoderToolParser>(tools);
  if (name == "deepseek_v3" || name == "deepseekv3" || name == "deepseek_v31") return std::make_unique<DeepSeekV3ToolParser>();
  PL_THROW("unknown tool call parser '{}' (known: qwen, qwen3_coder, deepseek_v3)", name);
}

std::string detect_tool_parser(const std::string& src) {
  if (src.find("tool\xE2\x96\x81" "calls\xE2\x96\x81" "begin") != std::string::npos) return "deepseek_v3";
  if (src.find("<function=") != std::string::npos) return "qwen3_coder";
  return "qwen";
}

std::string make_tool_call_id() {
  static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += chars[rng() % (sizeof(chars) - 1)];
  return id;
}

}  // namespace portllm::server
