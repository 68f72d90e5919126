#include <gtest/gtest.h>

#include "server/reasoning_parser.h"

using portllm::server::ReasoningParser;

namespace {
// Feeds `text` in pieces of `step` bytes and concatenates the deltas.
ReasoningParser::Delta feed(ReasoningParser& p, const std::string& text, size_t step) {
  ReasoningParser::Delta all;
  for (size_t i = 0; i < text.size(); i += step) {
    auto d = p.push(text.substr(i, step));
    all.reasoning += d.reasoning;
    all.content += d.content;
  }
  auto f = p.finish();
  all.reasoning += f.reasoning;
  all.content += f.content;
  return all;
}
}  // namespace

TEST(ReasoningParser, SplitsThinkBlockWholeAndStreamed) {
  const std::string out = "<think>\nLet me add 2 and 2.\n</think>\n\nThe answer is 4.";
  for (size_t step : {size_t(1), size_t(2), size_t(3), size_t(7), out.size()}) {
    ReasoningParser p;
    auto d = feed(p, out, step);
    EXPECT_EQ(d.reasoning, "\nLet me add 2 and 2.\n") << "step " << step;
    EXPECT_EQ(d.content, "The answer is 4.") << "step " << step;
  }
}

TEST(ReasoningParser, NoTagIsAllContent) {
  for (size_t step : {size_t(1), size_t(4)}) {
    ReasoningParser p;
    auto d = feed(p, "<b>Hello</b> world", step);
    EXPECT_EQ(d.reasoning, "");
    EXPECT_EQ(d.content, "<b>Hello</b> world");
  }
}

TEST(ReasoningParser, PromptEndingInThinkStartsInReasoning) {
  EXPECT_TRUE(ReasoningParser::prompt_ends_in_reasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(ReasoningParser::prompt_ends_in_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(ReasoningParser::prompt_ends_in_reasoning("<|im_start|>assistant\n"));
  ReasoningParser p(true);
  auto d = feed(p, "thinking...</think>done", 2);
  EXPECT_EQ(d.reasoning, "thinking...");
  EXPECT_EQ(d.content, "done");
}

TEST(ReasoningParser, UnfinishedThinkingStaysReasoning) {
  ReasoningParser p;
  auto d = feed(p, "<think>still going </thi", 3);  // cut off by max_tokens inside a partial tag
  EXPECT_EQ(d.reasoning, "still going </thi");
  EXPECT_EQ(d.content, "");
}

TEST(ReasoningParser, PartialStartTagIsHeldBack) {
  ReasoningParser p;
  auto d1 = p.push("<th");
  EXPECT_EQ(d1.content, "");
  EXPECT_EQ(d1.reasoning, "");
  auto d2 = p.push("ink>a</think>b");
  EXPECT_EQ(d2.reasoning, "a");
  EXPECT_EQ(d2.content, "b");
}
