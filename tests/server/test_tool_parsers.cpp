#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/tool_parser.h"
#include "server/tool_parser_deepseek_v3.h"
#include "server/tool_parser_qwen.h"

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
