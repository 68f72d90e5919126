// Exact parity with Hugging Face tokenizers on every encode case of every fixture.
#include <gtest/gtest.h>

#include "tok_test_util.h"

namespace portllm::tok::test {
namespace {

class Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Parity, EncodeDecodeMatchesHuggingFace) {
  const auto& tok = load(GetParam());
  const auto cases = read_json(fixture(GetParam()).cases_file);
  ASSERT_GT(cases["encode"].size(), 0u);
  for (const auto& c : cases["encode"]) {
    const auto text = c["text"].get<std::string>();
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    SCOPED_TRACE(nlohmann::json(text).dump());
    EXPECT_EQ(tok.encode(text, false), ids);
    EXPECT_EQ(tok.encode(text, true), c["ids_with_special"].get<std::vector<int32_t>>());
    EXPECT_EQ(tok.decode(ids, false), c["decoded"].get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Parity, ::testing::ValuesIn(fixture_names()),
                         [](const auto& info) { return info.param; });

// bos/eos come from tokenizer_config.json; the expected ids are the fixtures' own vocab entries.
TEST(TokenizerConfig, BosEosFromConfig) {
  const auto& qwen = load("qwen3");
  EXPECT_FALSE(qwen.bos_id().has_value());  // bos_token: null
  ASSERT_EQ(qwen.eos_ids().size(), 1u);
  EXPECT_EQ(qwen.eos_ids()[0], *qwen.token_to_id("<|im_end|>"));
  EXPECT_FALSE(qwen.chat_template().empty());

  const auto& llama2 = load("llama2");
  EXPECT_EQ(llama2.bos_id(), llama2.token_to_id("<s>"));
  ASSERT_EQ(llama2.eos_ids().size(), 1u);
  EXPECT_EQ(llama2.eos_ids()[0], *llama2.token_to_id("</s>"));
  EXPECT_EQ(llama2.add_bos_token(), std::optional<bool>(true));

  const auto& ds = load("deepseek_v3");  // bos/eos written as {"content": ...} objects
  EXPECT_EQ(ds.bos_id(), ds.token_to_id("<｜begin▁of▁sentence｜>"));
  EXPECT_EQ(ds.eos_ids(), std::vector<int32_t>{*ds.token_to_id("<｜end▁of▁sentence｜>")});
}

TEST(TokenizerVocab, SizesAndSpecials) {
  const auto& qwen = load("qwen3");
  // Added tokens extend past the model vocab (151643 entries).
  EXPECT_GT(qwen.vocab_size(), 151643);
  const auto im_end = *qwen.token_to_id("<|im_end|>");
  EXPECT_TRUE(qwen.is_special(im_end));
  EXPECT_EQ(qwen.id_to_token(im_end), "<|im_end|>");
  const auto think = qwen.token_to_id("<think>");
  ASSERT_TRUE(think.has_value());
  EXPECT_FALSE(qwen.is_special(*think));  // added but not special
  EXPECT_FALSE(qwen.is_special(9707));
  EXPECT_EQ(qwen.id_to_token(9707), "Hello");
  EXPECT_EQ(qwen.id_to_token(-1), "");
  EXPECT_EQ(load("stories260K").vocab_size(), 512);
}

TEST(TokenizerDecode, SkipSpecialTokens) {
  const auto& qwen = load("qwen3");
  const auto ids = qwen.encode("<|im_start|>user\nhi<|im_end|>", false);
  EXPECT_EQ(qwen.decode(ids, true), "user\nhi");
  EXPECT_EQ(qwen.decode(ids, false), "<|im_start|>user\nhi<|im_end|>");
  const auto& llama2 = load("llama2");
  const auto ids2 = llama2.encode("Hello", true);
  EXPECT_EQ(llama2.decode(ids2, true), "Hello");
}

}  // namespace
}  // namespace portllm::tok::test
