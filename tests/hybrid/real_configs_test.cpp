// The published Qwen3.5-27B, Qwen3.5-35B-A3B and Qwen3-Next-80B-A3B configs with dummy weights:
// they parse, pick the right layer kinds, and run prefill + decode at reduced depth (4 layers:
// three linear-attention layers and one full-attention layer) with finite logits. To keep the
// test to a few hundred MB, the vocabulary, expert count and MLP widths are shrunk in a copy of
// the config; every attention / Gated DeltaNet dimension (heads, head dims, conv kernel,
// partial rotary, text_config nesting) stays as published. Full-size runs: `portllm generate
// --load-format dummy --num-layers 4` (tests/e2e/hybrid_check_logits.sh with PORTLLM_TEST_BIG=1).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "model/model.h"
#include "runtime/single_sequence.h"

using namespace portllm;
namespace fs = std::filesystem;

namespace {
Device& cpu() {
  register_builtin_backends();
  return *BackendRegistry::instance().device("cpu");
}

// Copy of a real config with smaller vocab / experts / MLP, in a fresh temp directory.
std::string shrunk_config(const std::string& name) {
  std::ifstream in(std::string(PORTLLM_TEST_DATA) + "/configs/" + name + "/config.json");
  nlohmann::json j = nlohmann::json::parse(in);
  nlohmann::json& t = j.contains("text_config") ? j["text_config"] : j;
  t["vocab_size"] = 1024;
  if (t.contains("num_experts")) t["num_experts"] = 16;
  if (t.contains("intermediate_size")) t["intermediate_size"] = 512;
  const fs::path dir = fs::temp_directory_path() / ("portllm_hybrid_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << j.dump(2);
  return dir.string();
}
}  // namespace

TEST(HybridRealConfigs, DummyWeightsReducedDepthGiveFiniteLogits) {
  struct Case {
    const char* name;
    const char* arch;
    int64_t head_dim, linear_v_heads;
  };
  for (const Case c : {Case{"Qwen3.5-27B", "Qwen3_5ForConditionalGeneration", 256, 48},
                       Case{"Qwen3.5-35B-A3B", "Qwen3_5MoeForConditionalGeneration", 256, 32},
                       Case{"Qwen3-Next-80B-A3B-Instruct", "Qwen3NextForCausalLM", 256, 32}}) {
    const std::string dir = shrunk_config(c.name);
    OpContext ctx(cpu());
    ModelLoadOptions lo;
    lo.path = dir;
    lo.load_format = "dummy";
    lo.num_layers_override = 4;
    auto model = load_model(lo, ctx);
    EXPECT_EQ(model->config().architecture, c.arch);
    auto spec = model->cache_spec();
    ASSERT_EQ(spec.size(), 4u) << c.name;
    for (int l = 0; l < 3; ++l) EXPECT_EQ(spec[size_t(l)].kind, LayerCacheSpec::Kind::Recurrent) << c.name;
    EXPECT_EQ(spec[3].kind, LayerCacheSpec::Kind::PagedKV) << c.name;
    EXPECT_EQ(spec[3].head_dim_k, c.head_dim) << c.name;
    EXPECT_EQ(spec[0].state_shapes[1], (std::vector<int64_t>{c.linear_v_heads, 128, 128})) << c.name;

    SingleSequence seq(*model, ctx, 32, 16);
    const int64_t V = model->config().vocab_size;
    std::vector<std::vector<int32_t>> feeds = {{1, 2, 3, 4, 5, 6, 7}, {8}, {9}};
    for (auto& f : feeds) {
      Tensor l = seq.feed(f, true);
      ASSERT_EQ(l.size(0), int64_t(f.size()));
      int finite = 0;
      for (int64_t i = 0; i < l.numel(); ++i) finite += std::isfinite(l.ptr<float>()[i]) ? 1 : 0;
      EXPECT_EQ(finite, l.numel()) << c.name;
      // Not all equal: the layers did something with the input.
      EXPECT_NE(l.ptr<float>()[0], l.ptr<float>()[V - 1]) << c.name;
    }
    fs::remove_all(dir);
  }
}
