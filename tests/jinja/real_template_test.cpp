// The Qwen3.6 template (macros, namespaces updated from macros, multimodal lists, tool-call XML,
// raise_exception paths) against jinja2's own renderings (tests/data/jinja/qwen3_6).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/chat_template.h"

namespace portllm::tok {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

TEST(RealTemplates, Qwen36MatchesJinja2) {
  fs::path dir = fs::path(PORTLLM_TEST_DATA) / "jinja" / "qwen3_6";
  std::ifstream in(dir / "cases.json");
  ojson cases = ojson::parse(in);
  ChatTemplate t = ChatTemplate::from_tokenizer_dir(dir.string());  // chat_template.jinja only
  int n = 0, errors = 0;
  for (auto& c : cases["chat"]) {
    std::string got;
    try {
      got = t.render(c["messages"], c["kwargs"]);
    } catch (const portllm::Error& e) {
      got = std::string("raised: ") + e.what();
    }
    if (c.contains("error")) {
      ++errors;
      EXPECT_EQ(got, "raised: " + c["error"].get<std::string>()) << "case " << n;
    } else {
      EXPECT_EQ(got, c["rendered"].get<std::string>()) << "case " << n << ": " << c["messages"].dump();
    }
    ++n;
  }
  EXPECT_GE(n, 10);
  EXPECT_GE(errors, 3);
}

}  // namespace
}  // namespace portllm::tok
