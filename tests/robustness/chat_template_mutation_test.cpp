// Mutated chat templates (slices deleted, duplicated or moved, delimiters inserted) of the
// fixture tokenizers, Qwen3.6 and ChatML, rendered over a conversation with tools: each template
// renders or is refused with portllm::Error; no other exception, failed invariant or crash.
// Plus the templates that would recurse without end or nest past any stack, written on purpose.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/mapped_file.h"
#include "json_mutator.h"
#include "limits.h"
#include "outcome.h"
#include "tokenizer/chat_template.h"

using namespace portllm;
using namespace portllm::robustness;
namespace fs = std::filesystem;

namespace {

constexpr int kMutantsPerTemplate = 1500;

const nlohmann::ordered_json& messages() {
  static const auto m = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "reasoning_content": "Look it up.",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
    {"role": "assistant", "content": "<think>\nok\n</think>\n\n18 C."},
    {"role": "user", "content": "And tomorrow?"}
  ])");
  return m;
}

const nlohmann::ordered_json& kwargs() {
  static const auto k = nlohmann::ordered_json::parse(R"({"add_generation_prompt": true, "enable_thinking": false,
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]})");
  return k;
}

// The templates under test: name -> source.
std::vector<std::pair<std::string, std::string>> templates() {
  const fs::path data(PORTLLM_TEST_DATA);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : fs::directory_iterator(data / "tokenizers")) {
    const fs::path cfg = e.path() / "tokenizer_config.json";
    if (!fs::exists(cfg)) continue;
    const auto j = nlohmann::json::parse(read_text_file(cfg.string()));
    if (j.contains("chat_template") && j["chat_template"].is_string())
      out.emplace_back(e.path().filename().string(), j["chat_template"].get<std::string>());
  }
  out.emplace_back("qwen3_6", read_text_file((data / "jinja/qwen3_6/chat_template.jinja").string()));
  out.emplace_back("chatml", read_text_file((data / "server/chatml.jinja").string()));
  return out;
}

std::string render(const std::string& source) {
  return tok::ChatTemplate::from_string(source, "<s>", "</s>", "mutant.jinja").render(messages(), kwargs());
}

}  // namespace

TEST(Robustness, MutatedChatTemplates) {
  cap_address_space();
  Tally tally;
  uint64_t seed = 20000;
  const auto all = templates();
  ASSERT_GE(all.size(), 5u);
  for (const auto& [name, source] : all) {
    ASSERT_NO_THROW(render(source)) << name;
    for (int i = 0; i < mutants(kMutantsPerTemplate); ++i) {
      std::mt19937_64 rng(seed++);
      const std::string mutant = mutate_text(source, rng, 1 + i % 3);
      tally.run([&] { render(mutant); }, "", name + " mutant:\n" + mutant.substr(0, 4000));
    }
  }
  expect_contract(tally, 500, 3000);
}

// Templates that a stack cannot hold: a macro that calls itself, and expressions and blocks
// nested 50,000 deep. Each must be refused with an error, not overflow the stack.
TEST(Robustness, UnboundedTemplates) {
  cap_address_space();
  const int depth = 50000;
  std::string parens, ifs;
  for (int i = 0; i < depth; ++i) parens += "(";
  parens += "1";
  for (int i = 0; i < depth; ++i) parens += ")";
  for (int i = 0; i < depth; ++i) ifs += "{% if true %}";
  for (int i = 0; i < depth; ++i) ifs += "{% endif %}";
  // Both bounds at once: 199 macro levels, each evaluating an expression nested 90 parentheses
  // deep (about 1000 parser steps, just inside the bound): renders or is refused, within the stack.
  std::string deep_body = std::string(90, '(') + "n" + std::string(90, ')');
  const std::string deep_macro = "{% macro f(n) %}{% if n < 199 %}{{ f(n + 1) }}{% endif %}{{ " + deep_body +
                                 " }}{% endmacro %}{{ f(0) }}";
  {
    Tally tally;
    tally.run([&] { render(deep_macro); }, "", "deep macro bodies");
    EXPECT_TRUE(tally.findings.empty()) << tally.report();
  }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"recursive macro", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"},
      {"nested parentheses", "{{ " + parens + " }}"},
      {"nested lists", "{{ " + std::string(depth, '[') + std::string(depth, ']') + " }}"},
      {"nested if blocks", ifs},
      {"huge range", "{% for i in range(4611686018427387904) %}{% endfor %}"},
      {"huge string repeat", "{{ 'ab' * 4611686018427387904 }}"},
      {"huge list repeat", "{{ [1, 2] * 4611686018427387904 }}"},
  };
  for (const auto& [name, source] : cases) {
    Tally tally;
    tally.run([&] { render(source); }, "", name);
    EXPECT_EQ(tally.refused, 1) << name << ": " << tally.report();
  }
}
