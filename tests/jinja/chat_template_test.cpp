// ChatTemplate against transformers' own renderings (tests/data/tokenizers/*/cases.json, "chat"),
// plus loading rules (template sources, token fields) and render speed.
#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/chat_template.h"

namespace portllm::tok {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

const fs::path kTokenizers = fs::path(PORTLLM_TEST_DATA) / "tokenizers";

ojson read_json(const fs::path& p) {
  std::ifstream in(p);
  return ojson::parse(in);
}

int check_fixture(const std::string& name) {
  fs::path dir = kTokenizers / name;
  ojson cases = read_json(dir / "cases.json");
  ChatTemplate t = ChatTemplate::from_tokenizer_dir(dir.string());
  int n = 0;
  for (auto& c : cases["chat"]) {
    EXPECT_EQ(t.render(c["messages"], c["kwargs"]), c["rendered"].get<std::string>())
        << name << " case " << n << ": " << c["messages"].dump() << " kwargs " << c["kwargs"].dump();
    ++n;
  }
  return n;
}

TEST(ChatFixtures, Qwen3) { EXPECT_GT(check_fixture("qwen3"), 0); }
TEST(ChatFixtures, DeepSeekV3) { EXPECT_GT(check_fixture("deepseek_v3"), 0); }
TEST(ChatFixtures, Llama3) { EXPECT_GT(check_fixture("llama3"), 0); }

TEST(ChatFixtures, EveryFixtureWithChatCasesIsCovered) {
  for (auto& e : fs::directory_iterator(kTokenizers)) {
    if (!fs::exists(e.path() / "cases.json")) continue;
    ojson cases = read_json(e.path() / "cases.json");
    if (!cases.contains("chat") || cases["chat"].empty()) continue;
    std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "qwen3" || name == "deepseek_v3" || name == "llama3") << "add a test for " << name;
  }
}

TEST(ChatFixtures, Llama2HasNoTemplate) {
  try {
    ChatTemplate::from_tokenizer_dir((kTokenizers / "llama2").string());
    FAIL() << "llama2's tokenizer_config.json has no chat_template";
  } catch (const portllm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos) << e.what();
  }
}

// DeepSeek-V2's template (read from its tokenizer_config.json): bos, then "User: X\n\n" per user
// turn, "Assistant: X" + eos per assistant turn, system content + "\n\n", and "Assistant:" as the
// generation prompt.
TEST(ChatFixtures, DeepSeekV2Structure) {
  ChatTemplate t = ChatTemplate::from_tokenizer_dir((kTokenizers / "deepseek_v2").string());
  EXPECT_EQ(t.bos_token(), "<｜begin▁of▁sentence｜>");
  EXPECT_EQ(t.eos_token(), "<｜end▁of▁sentence｜>");
  ojson msgs = ojson::parse(R"([{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Hi"},
                                {"role": "assistant", "content": "Hello!"},
                                {"role": "user", "content": "2+2?"}])");
  EXPECT_EQ(t.render(msgs, ojson{{"add_generation_prompt", true}}),
            "<｜begin▁of▁sentence｜>Be brief.\n\nUser: Hi\n\nAssistant: Hello!<｜end▁of▁sentence｜>User: 2+2?\n\nAssistant:");
  EXPECT_EQ(t.render(ojson::parse(R"([{"role": "user", "content": "Hi"}])"), ojson::object()),
            "<｜begin▁of▁sentence｜>User: Hi\n\n");
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("portllm_jinja_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name) << text; }
};

TEST(ChatTemplateLoad, ListFormTokenObjectsAndPrecedence) {
  TempDir d;
  d.write("tokenizer_config.json", R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>"}, "eos_token": "</s>",
    "chat_template": [{"name": "tool_use", "template": "TOOLS"},
                      {"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"}]})");
  ojson msgs = ojson::parse(R"([{"role": "user", "content": "x"}])");
  EXPECT_EQ(ChatTemplate::from_tokenizer_dir(d.path.string()).render(msgs, ojson::object()), "<s>x</s>");
  d.write("chat_template.json", R"({"chat_template": "json:{{ messages[0].content }}"})");
  EXPECT_EQ(ChatTemplate::from_tokenizer_dir(d.path.string()).render(msgs, ojson::object()), "json:x");
  d.write("chat_template.jinja", "jinja:{{ messages[0].content }}\n");
  EXPECT_EQ(ChatTemplate::from_tokenizer_dir(d.path.string()).render(msgs, ojson::object()), "jinja:x");
}

TEST(ChatTemplateRender, KwargsBecomeVariablesAndDefaults) {
  auto t = ChatTemplate::from_string(
      "{{ add_generation_prompt }}|{{ tools }}|{{ bos_token is defined }}|{{ custom }}|{{ enable_thinking is defined }}",
      "", "", "t");
  EXPECT_EQ(t.render(ojson::array(), ojson::object()), "False|None|False||False");
  EXPECT_EQ(t.render(ojson::array(), ojson{{"custom", 7}, {"enable_thinking", true}, {"add_generation_prompt", true}}),
            "True|None|False|7|True");
}

TEST(ChatTemplateRender, OrderedJsonKeepsKeyOrderInTojson) {
  auto t = ChatTemplate::from_string("{{ messages[0] | tojson }}", "", "", "t");
  EXPECT_EQ(t.render(ojson::parse(R"([{"role": "user", "content": "x"}])"), ojson::object()),
            R"({"role": "user", "content": "x"})");
}

TEST(ChatTemplateRender, TypicalChatIsFarUnderOneMillisecond) {
  fs::path dir = kTokenizers / "qwen3";
  ChatTemplate t = ChatTemplate::from_tokenizer_dir(dir.string());
  ojson cases = read_json(dir / "cases.json");
  const ojson& c = cases["chat"][4];  // the tools case: the longest render
  std::string ref = t.render(c["messages"], c["kwargs"]);
  const int iters = 200;
  auto t0 = std::chrono::steady_clock::now();
  size_t total = 0;
  for (int k = 0; k < iters; ++k) total += t.render(c["messages"], c["kwargs"]).size();
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
  EXPECT_EQ(total, ref.size() * iters);
  std::printf("qwen3 tools chat render: %.1f us\n", us);
  EXPECT_LT(us, 1000.0);
}

}  // namespace
}  // namespace portllm::tok
