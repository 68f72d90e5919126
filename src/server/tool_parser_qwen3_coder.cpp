#include "server/tool_parser_qwen3_coder.h"

namespace portllm::server {

namespace {
constexpr std::string_view kBegin = "<tool_call>", kEnd = "</tool_call>", kFunction = "<function=",
                           kFunctionEnd = "</function>", kParam = "<parameter=", kParamEnd = "</parameter>";

// The template writes a newline after '>' and before the closing tag; the value is between.
std::string_view strip_one_newline(std::string_view v) {
  if (!v.empty() && v.front() == '\n') v.remove_prefix(1);
  if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
  return v;
}
}  // namespace

std::string Qwen3CoderToolParser::forced_prefix(const std::string& name) const {
  if (name.empty()) return "<tool_call>\n<function=";
  return "<tool_call>\n<function=" + name + ">\n";
}

std::string Qwen3CoderToolParser::param_type(const std::string& fn, const std::string& param) const {
  if (!tools_.is_array()) return "";
  for (const auto& t : tools_) {
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
    const auto& f = t["function"];
    if (!f.contains("name") || f["name"] != fn) continue;
    const auto* props = f.contains("parameters") && f["parameters"].is_object() && f["parameters"].contains("properties")
                            ? &f["parameters"]["properties"] : nullptr;
    if (!props || !props->is_object() || !props->contains(param) || !(*props)[param].is_object()) return "";
    const auto& type = (*props)[param].contains("type") ? (*props)[param]["type"] : nlohmann::ordered_json();
    if (type.is_string()) return type.get<std::string>();
    // ["string", "null"] and the like: text if it may be a string, JSON otherwise.
    if (type.is_array()) {
      for (const auto& x : type)
        if (x == "string") return "string";
      return type.empty() ? "" : "json";
    }
    return "";
  }
  return "";
}

// One <tool_call> body: <function=NAME> then <parameter=P>VALUE</parameter> pairs. A missing
// </parameter> (output cut off, or the model skipped it) ends the value at the next tag.
bool Qwen3CoderToolParser::parse_call(std::string_view body, ToolCall& call) const {
  const size_t f = body.find(kFunction);
  if (f == std::string_view::npos) return false;
  const size_t name_end = body.find('>', f + kFunction.size());
  if (name_end == std::string_view::npos) return false;
  call.name = std::string(body.substr(f + kFunction.size(), name_end - f - kFunction.size()));
  if (call.name.empty() || call.name.find_first_of("<\n") != std::string::npos) return false;
  nlohmann::ordered_json args = nlohmann::ordered_json::object();
  size_t pos = name_end + 1;
  while (true) {
    const size_t p = body.find(kParam, pos);
    if (p == std::string_view::npos) break;
    const size_t pname_end = body.find('>', p + kParam.size());
    if (pname_end == std::string_view::npos) return false;
    const std::string pname(body.substr(p + kParam.size(), pname_end - p - kParam.size()));
    size_t vend = body.find(kParamEnd, pname_end + 1);
    const size_t next_tag = std::min(body.find(kParam, pname_end + 1), body.find(kFunctionEnd, pname_end + 1));
    const bool closed = vend != std::string_view::npos && vend <= next_tag;
    if (!closed) vend = next_tag == std::string_view::npos ? body.size() : next_tag;
    const std::string value(strip_one_newline(body.substr(pname_end + 1, vend - pname_end - 1)));
    const std::string type = param_type(call.name, pname);
    nlohmann::ordered_json v = value;
    if (!type.empty() && type != "string") {
      try {
        v = nlohmann::ordered_json::parse(value);
      } catch (const std::exception&) {  // not JSON after all: keep the text
      }
    }
    args[pname] = std::move(v);
    pos = closed ? vend + kParamEnd.size() : vend;
  }
  call.arguments = args.dump();
  return true;
}

void Qwen3CoderToolParser::parse_calls(std::string_view held, std::vector<ToolCall>& calls, std::string& content) const {
  for_each_block(held, kBegin, kEnd, [&](std::string_view body) {
    ToolCall c;
    if (!parse_call(body, c)) return false;
    calls.push_back(std::move(c));
    return true;
  }, content);
}

}  // namespace portllm::server
