#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/tool_parser.h"
#include "server/tool_parser_deepseek_v3.h"
#include "server/tool_parser_qwen.h"
#include "server/tool_parser_qwen3_coder.h"
#include "core/mapped_file.h"
#include "tokenizer/chat_template.h"

using namespace portllm::server;

namespace {
ToolParser::Result feed(ToolParser& p, const std::string& text, size_t step) {
  std::string content;
  for (size_t i = 0; i < text.size(); i += step) content += p.push(text.substr(i, step));
  auto r = p.finish();
  r.content = content + r.content;
  return r;
}
}  // namespace

TEST(QwenToolParser, ParsesParallelCallsAnyChunking) {
  const std::string out =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  for (size_t step : {size_t(1), size_t(5), out.size()}) {
    QwenToolParser p;
    auto r = feed(p, out, step);
    EXPECT_EQ(r.content, "Let me check.\n") << step;
    ASSERT_EQ(r.calls.size(), 2u) << step;
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(nlohmann::json::parse(r.calls[0].arguments), nlohmann::json::parse(R"({"city":"Paris","unit":"c"})"));
    EXPECT_EQ(r.calls[1].name, "get_time");
    EXPECT_EQ(r.calls[1].arguments, "{}");
  }
}

TEST(QwenToolParser, ArgumentsKeepKeyOrder) {
  QwenToolParser p;
  auto r = p.parse("<tool_call>{\"name\": \"f\", \"arguments\": {\"z\": 1, \"a\": 2}}</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, "{\"z\":1,\"a\":2}");
}

TEST(QwenToolParser, MalformedCallStaysContent) {
  QwenToolParser p;
  const std::string out = "<tool_call>\n{\"name\": \"f\", \"arguments\": {oops}\n</tool_call>";
  auto r = p.parse(out);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, out);
}

TEST(QwenToolParser, NoCallIsContentAndPartialMarkerReleasedAtEnd) {
  QwenToolParser p;
  EXPECT_EQ(p.push("a < b <tool_"), "a < b ");
  auto r = p.finish();
  EXPECT_EQ(r.content, "<tool_");
  EXPECT_TRUE(r.calls.empty());
}

TEST(QwenToolParser, ForcedPrefixContinuesToACall) {
  QwenToolParser p;
  std::string prefix = p.forced_prefix("get_weather");
  EXPECT_EQ(p.push(prefix), "");
  EXPECT_EQ(p.push("{\"city\": \"Oslo\"}}\n</tool_call>"), "");
  auto r = p.finish();
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Oslo\"}");
}

TEST(DeepSeekV3ToolParser, ParsesV3Format) {
  const std::string out =
      "Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Beijing\"}\n```"
      "<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  for (size_t step : {size_t(1), size_t(6), out.size()}) {
    DeepSeekV3ToolParser p;
    auto r = feed(p, out, step);
    EXPECT_EQ(r.content, "Sure.") << step;
    ASSERT_EQ(r.calls.size(), 2u) << step;
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Beijing\"}");
    EXPECT_EQ(r.calls[1].name, "get_time");
  }
}

TEST(DeepSeekV3ToolParser, ParsesV31Format) {
  DeepSeekV3ToolParser p;
  auto r = p.parse("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{\"q\": \"x\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "search");
  EXPECT_EQ(r.calls[0].arguments, "{\"q\":\"x\"}");
  EXPECT_EQ(r.content, "");
}

TEST(DeepSeekV3ToolParser, GarbageStaysContent) {
  DeepSeekV3ToolParser p;
  const std::string out = "<｜tool▁calls▁begin｜>not a call";
  auto r = p.parse(out);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, out);
}

TEST(ToolParser, FactoryAndDetection) {
  EXPECT_EQ(detect_tool_parser("{% for m in messages %}<tool_call>{% endfor %}"), "qwen");
  EXPECT_EQ(detect_tool_parser("{{'<｜tool▁calls▁begin｜>'}}"), "deepseek_v3");
  EXPECT_NE(dynamic_cast<DeepSeekV3ToolParser*>(make_tool_parser("deepseek_v3").get()), nullptr);
  EXPECT_THROW(make_tool_parser("nope"), std::exception);
  std::string id = make_tool_call_id();
  EXPECT_EQ(id.rfind("call_", 0), 0u);
  EXPECT_EQ(id.size(), 29u);
  EXPECT_NE(id, make_tool_call_id());
}

namespace {
// The tools of a request, as the Qwen3-Coder parser types parameters from them.
nlohmann::ordered_json weather_tools() {
  return nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {
      "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
      "opts": {"type": "object"}, "note": {"type": ["string", "null"]}}}}}])");
}
}  // namespace

TEST(Qwen3CoderToolParser, ParsesParallelCallsAnyChunkingWithSchemaTypes) {
  // As Qwen3.6's chat template writes calls: strings raw, other values as JSON.
  const std::string out =
      "Checking.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=opts>\n{\"unit\": \"c\"}\n</parameter>\n"
      "<parameter=note>\n42\n</parameter>\n</function>\n</tool_call>\n"
      "<tool_call>\n<function=get_time>\n<parameter=zone>\n7\n</parameter>\n</function>\n</tool_call>";
  for (size_t step : {size_t(1), size_t(7), out.size()}) {
    Qwen3CoderToolParser p(weather_tools());
    auto r = feed(p, out, step);
    EXPECT_EQ(r.content, "Checking.\n\n") << step;
    ASSERT_EQ(r.calls.size(), 2u) << step;
    EXPECT_EQ(r.calls[0].name, "get_weather");
    // "3" is an integer by the schema, "42" stays text ("note" may be a string), the object is JSON.
    EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris","days":3,"opts":{"unit":"c"},"note":"42"})");
    EXPECT_EQ(r.calls[1].name, "get_time");
    EXPECT_EQ(r.calls[1].arguments, R"({"zone":"7"})");  // undeclared: text, as vLLM keeps it
  }
}

TEST(Qwen3CoderToolParser, MultilineValuesMissingCloseTagsAndGarbage) {
  Qwen3CoderToolParser p(weather_tools());
  // A value keeps its inner newlines; a missing </parameter> ends at the next tag; a call cut off
  // by max_tokens (no </tool_call>) still parses.
  auto r = p.parse("<tool_call>\n<function=get_weather>\n<parameter=city>\nNew\nYork\n<parameter=days>\n2\n</function>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"New\nYork","days":2})");
  Qwen3CoderToolParser q;
  const std::string junk = "<tool_call>\nno function here\n</tool_call>";
  auto g = q.parse(junk);
  EXPECT_TRUE(g.calls.empty());
  EXPECT_EQ(g.content, junk);
}

TEST(Qwen3CoderToolParser, ForcedPrefixContinuesToACall) {
  Qwen3CoderToolParser p(weather_tools());
  EXPECT_EQ(p.forced_prefix(""), "<tool_call>\n<function=");
  const std::string prefix = p.forced_prefix("get_weather");
  EXPECT_EQ(prefix, "<tool_call>\n<function=get_weather>\n");
  auto r = p.parse(prefix + "<parameter=city>\nRome\n</parameter>\n</function>\n</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Rome"})");
}

TEST(Qwen3CoderToolParser, DetectedFromTheQwen36Template) {
  const std::string src = portllm::read_text_file(std::string(PORTLLM_TEST_DATA) + "/jinja/qwen3_6/chat_template.jinja");
  EXPECT_EQ(detect_tool_parser(src), "qwen3_coder");
  EXPECT_NE(dynamic_cast<Qwen3CoderToolParser*>(make_tool_parser("qwen3_coder").get()), nullptr);
}

// What Qwen3.6's template writes for an assistant's tool call, the parser reads back: the same
// name and arguments (the template prints strings raw and other values as JSON).
TEST(Qwen3CoderToolParser, ReadsBackWhatTheQwen36TemplateWrites) {
  const std::string src = portllm::read_text_file(std::string(PORTLLM_TEST_DATA) + "/jinja/qwen3_6/chat_template.jinja");
  const auto tmpl = portllm::tok::ChatTemplate::from_string(src, "", "<|im_end|>", "qwen3_6");
  const auto args = nlohmann::ordered_json::parse(R"({"city": "Paris", "days": 3, "opts": {"unit": "c"}})");
  const auto messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {}}}]}])");
  auto msgs = messages;
  msgs[1]["tool_calls"][0]["function"]["arguments"] = args;
  const std::string prompt = tmpl.render(msgs, nlohmann::ordered_json{{"tools", weather_tools()}});
  const size_t at = prompt.rfind("<tool_call>");
  ASSERT_NE(at, std::string::npos) << prompt;
  Qwen3CoderToolParser p(weather_tools());
  auto r = p.parse(prompt.substr(at, prompt.find("</tool_call>", at) + 12 - at));
  ASSERT_EQ(r.calls.size(), 1u) << prompt.substr(at);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::ordered_json::parse(r.calls[0].arguments), args);
}
