// Broken tokenizer files must fail to load with one clear error naming the file and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace portllm::tok {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json valid() {
  return {{"version", "1.0"},
          {"added_tokens", json::array({{{"id", 3}, {"content", "<s>"}, {"special", true},
                                         {"normalized", false}}})},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}},
                     {"merges", {"a b"}}}}};
}

class LoadErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("portllm_tok_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  // Loads the directory and returns the error message ("" if it loaded).
  std::string error_of() {
    try {
      Tokenizer::from_dir(dir_.string());
    } catch (const portllm::Error& e) {
      return e.what();
    }
    return "";
  }
  std::string error_of(const json& j) {
    write("tokenizer.json", j.dump());
    return error_of();
  }
  fs::path dir_;
};

#define EXPECT_MENTIONS(msg, needle) \
  EXPECT_NE((msg).find(needle), std::string::npos) << "message: " << (msg)

TEST_F(LoadErrors, ValidBaseLoads) {
  write("tokenizer.json", valid().dump());
  auto t = Tokenizer::from_dir(dir_.string());
  EXPECT_EQ(t->encode("ab<s>", false), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(t->config(), json::object());
}

TEST_F(LoadErrors, MissingFile) {
  const auto m = error_of();
  EXPECT_MENTIONS(m, "tokenizer.json");
  EXPECT_MENTIONS(m, "not found");
}

TEST_F(LoadErrors, MalformedJson) {
  write("tokenizer.json", "{\"model\": {");
  const auto m = error_of();
  EXPECT_MENTIONS(m, "tokenizer.json");
  EXPECT_MENTIONS(m, "invalid JSON");
}

TEST_F(LoadErrors, MalformedConfigJson) {
  write("tokenizer.json", valid().dump());
  write("tokenizer_config.json", "[1,");
  const auto m = error_of();
  EXPECT_MENTIONS(m, "tokenizer_config.json");
  EXPECT_MENTIONS(m, "invalid JSON");
}

TEST_F(LoadErrors, MissingModel) {
  auto j = valid();
  j.erase("model");
  EXPECT_MENTIONS(error_of(j), "missing field 'model'");
}

TEST_F(LoadErrors, UnsupportedModelType) {
  auto j = valid();
  j["model"]["type"] = "Unigram";
  EXPECT_MENTIONS(error_of(j), "unsupported model type 'Unigram'");
}

TEST_F(LoadErrors, MergeTokenNotInVocab) {
  auto j = valid();
  j["model"]["merges"] = {"a b", "a zz"};
  const auto m = error_of(j);
  EXPECT_MENTIONS(m, "tokenizer.json");
  EXPECT_MENTIONS(m, "merges[1]");
  EXPECT_MENTIONS(m, "'zz' is not in the vocab");
}

TEST_F(LoadErrors, MergedTokenNotInVocab) {
  auto j = valid();
  j["model"]["merges"] = json::array({json::array({"b", "a"})});
  EXPECT_MENTIONS(error_of(j), "merged token 'ba' is not in the vocab");
}

TEST_F(LoadErrors, MalformedMergeEntry) {
  auto j = valid();
  j["model"]["merges"] = {"ab"};
  EXPECT_MENTIONS(error_of(j), "merges[0]");
}

TEST_F(LoadErrors, MissingVocab) {
  auto j = valid();
  j["model"].erase("vocab");
  EXPECT_MENTIONS(error_of(j), "'vocab'");
}

TEST_F(LoadErrors, UnknownComponentTypes) {
  for (const char* field : {"normalizer", "pre_tokenizer", "post_processor", "decoder"}) {
    auto j = valid();
    j[field] = {{"type", "Frobnicate"}};
    const auto m = error_of(j);
    EXPECT_MENTIONS(m, "tokenizer.json");
    EXPECT_MENTIONS(m, field);
    EXPECT_MENTIONS(m, "unknown");
    EXPECT_MENTIONS(m, "'Frobnicate'");
  }
}

TEST_F(LoadErrors, UnknownTypeNestedInSequence) {
  auto j = valid();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "Nope"}}}}};
  const auto m = error_of(j);
  EXPECT_MENTIONS(m, "pretokenizers[1]");
  EXPECT_MENTIONS(m, "'Nope'");
}

TEST_F(LoadErrors, InvalidRegex) {
  auto j = valid();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}},
                        {"behavior", "Isolated"}};
  const auto m = error_of(j);
  EXPECT_MENTIONS(m, "pre_tokenizer");
  EXPECT_MENTIONS(m, "invalid regex");
}

TEST_F(LoadErrors, BadSplitBehavior) {
  auto j = valid();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
  EXPECT_MENTIONS(error_of(j), "'Sideways'");
}

TEST_F(LoadErrors, AddedTokenMissingField) {
  auto j = valid();
  j["added_tokens"] = json::array({{{"id", 5}}});
  const auto m = error_of(j);
  EXPECT_MENTIONS(m, "added_tokens[0]");
  EXPECT_MENTIONS(m, "'content'");
}

TEST_F(LoadErrors, ConfigTokenNotInVocab) {
  write("tokenizer.json", valid().dump());
  write("tokenizer_config.json", json({{"eos_token", "</nope>"}}).dump());
  const auto m = error_of();
  EXPECT_MENTIONS(m, "eos_token");
  EXPECT_MENTIONS(m, "'</nope>'");
}

TEST_F(LoadErrors, WrongFieldType) {
  auto j = valid();
  j["model"]["byte_fallback"] = "yes";
  EXPECT_MENTIONS(error_of(j), "'byte_fallback'");
}

}  // namespace
}  // namespace portllm::tok
