// Every real config in tests/data/configs parses (both rope dialects, text_config wrappers, fp8
// quantization_config); bad configs give one error naming the file and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "model/config.h"
#include "model/model.h"
#include "model/rope.h"

using namespace portllm;
namespace fs = std::filesystem;

TEST(Config, EveryRealConfigParses) {
  int n = 0;
  for (auto& d : fs::directory_iterator(fs::path(PORTLLM_TEST_DATA) / "configs")) {
    const fs::path p = d.path() / "config.json";
    if (!fs::exists(p)) continue;
    ModelConfig c = ModelConfig::from_file(p.string());
    EXPECT_GT(c.hidden_size, 0) << p;
    EXPECT_GT(c.vocab_size, 0) << p;
    EXPECT_FALSE(c.architecture.empty()) << p;
    ++n;
  }
  EXPECT_GE(n, 12);
}

TEST(Config, ReadsBothRopeDialectsAndTextConfig) {
  ModelConfig q35 = ModelConfig::from_file(std::string(PORTLLM_TEST_DATA) + "/configs/Qwen3.5-27B/config.json");
  EXPECT_EQ(q35.architecture, "Qwen3_5ForConditionalGeneration");
  EXPECT_EQ(q35.model_type, "qwen3_5_text");
  EXPECT_DOUBLE_EQ(q35.rope.theta, 10000000.0);
  EXPECT_DOUBLE_EQ(q35.rope.partial_rotary_factor, 0.25);
  EXPECT_EQ(q35.vocab_size, 248320);

  ModelConfig llama = ModelConfig::from_file(std::string(PORTLLM_TEST_DATA) + "/configs/Meta-Llama-3.1-8B_base/config.json");
  EXPECT_EQ(llama.rope.type, "llama3");
  EXPECT_DOUBLE_EQ(llama.rope.factor, 8.0);
  EXPECT_EQ(llama.rope.original_max_position_embeddings, 8192);

  ModelConfig fp8 = ModelConfig::from_file(std::string(PORTLLM_TEST_DATA) + "/configs/Qwen3-30B-A3B-FP8/config.json");
  EXPECT_EQ(fp8.quant.method, "fp8");
  EXPECT_EQ(fp8.quant.block_n, 128);
  EXPECT_EQ(fp8.quant.block_k, 128);

  ModelConfig ds = ModelConfig::from_file(std::string(PORTLLM_TEST_DATA) + "/configs/DeepSeek-V2-Lite-Chat/config.json");
  EXPECT_EQ(ds.rope.type, "yarn");
  ASSERT_TRUE(ds.rope.mscale_all_dim.has_value());
}

namespace {
std::string config_error(const std::string& json) {
  const fs::path dir = fs::temp_directory_path() / "portllm_cfg_test";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << json;
  try {
    load_config(dir.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Config, BadConfigsNameTheProblem) {
  const std::string base = R"("architectures":["LlamaForCausalLM"],"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10)";
  EXPECT_NE(config_error("{").find("invalid JSON"), std::string::npos);
  EXPECT_NE(config_error("[1]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(config_error(R"({"hidden_size":64})").find("missing field 'architectures'"), std::string::npos);
  EXPECT_NE(config_error(R"({"architectures":["LlamaForCausalLM"],"hidden_size":"big"})").find("'hidden_size' must be an integer"), std::string::npos);
  EXPECT_NE(config_error("{" + base + R"(,"num_key_value_heads":3})").find("multiple of num_key_value_heads"), std::string::npos);
  EXPECT_NE(config_error("{" + base + R"(,"rope_scaling":{"rope_type":"su"}})").find("rope_type 'su' is not supported"), std::string::npos);
  const std::string unsupported = config_error(R"({"architectures":["GPT2LMHeadModel"],"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10})");
  EXPECT_NE(unsupported.find("unsupported architecture 'GPT2LMHeadModel'"), std::string::npos) << unsupported;
  EXPECT_NE(unsupported.find("config.json"), std::string::npos);
  EXPECT_NE(config_error("{" + base + R"(,"quantization_config":{"quant_method":"awq"}})").find("quant_method 'awq'"), std::string::npos);
  // Fields of the wrong kind, found by tests/robustness: named, not nlohmann's type_error.
  EXPECT_NE(config_error(R"({"architectures":[1]})").find("'architectures[0]' must be a string"), std::string::npos);
  EXPECT_NE(config_error("{" + base + R"(,"rope_scaling":{"rope_type":7}})").find("'rope_scaling.rope_type' must be a string"), std::string::npos);
  EXPECT_NE(config_error("{" + base + R"(,"quantization_config":[1]})").find("'quantization_config' must be an object"), std::string::npos);
  EXPECT_NE(config_error("{" + base + R"(,"quantization_config":{"quant_method":"fp8","ignored_layers":[3]}})")
                .find("'quantization_config.ignored_layers[0]' must be a string"), std::string::npos);
  EXPECT_NE(config_error("{" + base + R"(,"max_position_embeddings":4611686018427387904})").find("max_position_embeddings"), std::string::npos);
  EXPECT_NE(config_error("{" + base + R"(,"text_config":[]})").find("'text_config' must be an object"), std::string::npos);
}

// The rotary dim is checked where it is derived: 3.5 x head_dim wrote past each head before, an
// odd one (0.2 x 16 = 3) failed an invariant in the RoPE table.
TEST(Config, RotaryDimMustFitTheHead) {
  const std::string base = R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10)";
  auto rotary = [&](const std::string& extra) { return ModelConfig::from_json(nlohmann::json::parse(base + extra + "}"), "config.json").rotary_dim(); };
  EXPECT_EQ(rotary(""), 16);
  EXPECT_EQ(rotary(R"(,"partial_rotary_factor":0.5)"), 8);
  EXPECT_EQ(rotary(R"(,"partial_rotary_factor":0.3)"), 4);  // int(4.8), as transformers truncates
  for (const char* bad : {R"(,"partial_rotary_factor":3.5)", R"(,"partial_rotary_factor":0.2)", R"(,"partial_rotary_factor":0)"}) {
    try {
      rotary(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("partial_rotary_factor"), std::string::npos) << e.what();
    }
  }
}

TEST(Rope, Llama3ScalingKeepsHighFrequenciesAndScalesLowOnes) {
  RopeConfig r;
  r.type = "llama3";
  r.theta = 500000;
  r.factor = 8;
  r.low_freq_factor = 1;
  r.high_freq_factor = 4;
  r.original_max_position_embeddings = 8192;
  RopeFrequencies f = rope_frequencies(r, 128);
  RopeConfig plain;
  plain.theta = 500000;
  RopeFrequencies p = rope_frequencies(plain, 128);
  EXPECT_DOUBLE_EQ(f.inv_freq[0], p.inv_freq[0]);             // wavelength 2*pi: unchanged
  EXPECT_DOUBLE_EQ(f.inv_freq[63], p.inv_freq[63] / 8);       // longest wavelength: divided by factor
}

TEST(Rope, YarnAttentionFactorFromMscale) {
  RopeConfig r;
  r.type = "yarn";
  r.factor = 40;
  r.mscale = 0.707;
  r.mscale_all_dim = 0.707;
  r.original_max_position_embeddings = 4096;
  EXPECT_DOUBLE_EQ(rope_frequencies(r, 64).attention_factor, 1.0);  // equal mscales cancel
  r.mscale_all_dim.reset();
  r.mscale.reset();
  EXPECT_NEAR(rope_frequencies(r, 64).attention_factor, 0.1 * std::log(40.0) + 1.0, 1e-12);
}
