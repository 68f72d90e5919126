// MoE and MLA models on the CPU against transformers' reference logits: Qwen3-MoE,
// DeepSeek-V2 (MLA without q_lora, greedy softmax routing, shared experts), DeepSeek-V3 (q_lora,
// noaux_tc grouped sigmoid routing) and its block-FP8 checkpoint; prefill whole, in chunks and
// token by token (decode over the latent cache); the MLA cache size of real configs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "model/layers/mla_attention.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "runtime/single_sequence.h"

#include "../common/fixture_parity.h"
#include "../common/model_fixtures.h"

using namespace portllm;
using namespace portllm::testing;

namespace {

std::string real_config(const std::string& name) { return std::string(PORTLLM_TEST_DATA) + "/configs/" + name; }

struct FixtureCase {
  const char* name;
  double tol;
};
const FixtureCase kFixtures[] = {{"qwen3moe-tiny", 1e-3}, {"deepseekv2-tiny", 1e-3}, {"deepseekv3-tiny", 1e-3},
                                 {"deepseekv3fp8-tiny", 1e-2}};
}  // namespace

TEST(MoeMlaModels, MatchTransformersWholePrefill) {
  for (auto& f : kFixtures) EXPECT_LE(max_logit_diff(f.name, 0), f.tol) << f.name;
}

TEST(MoeMlaModels, ChunkedPrefillMatches) {
  for (auto& f : kFixtures) EXPECT_LE(max_logit_diff(f.name, 3), f.tol) << f.name;
}

TEST(MoeMlaModels, DecodeTokenByTokenMatches) {
  for (auto& f : kFixtures) EXPECT_LE(max_logit_diff(f.name, 1), f.tol) << f.name;
}

TEST(MoeMlaModels, Bf16LatentCacheStaysClose) {
  // A bf16 cache rounds the latent; logits move by far less than their O(1) scale.
  EXPECT_LE(max_logit_diff("deepseekv3-tiny", 4, DType::BF16), 5e-2);
}

TEST(MoeMlaModels, MlaCacheIsOneLatentPerToken) {
  OpContext ctx(cpu());
  for (const char* name : {"deepseekv2-tiny", "deepseekv3-tiny", "deepseekv3fp8-tiny"}) {
    ModelLoadOptions lo;
    lo.path = fixture(name);
    auto model = load_model(lo, ctx);
    const auto& cfg = model->config();
    const int64_t latent = cfg.get_int("kv_lora_rank") + cfg.get_int("qk_rope_head_dim");
    auto spec = model->cache_spec();
    ASSERT_EQ(int64_t(spec.size()), cfg.num_layers) << name;
    for (auto& s : spec) {
      EXPECT_EQ(s.kind, LayerCacheSpec::Kind::PagedLatent) << name;
      EXPECT_EQ(s.latent_dim, latent) << name;
      EXPECT_EQ(s.bytes_per_token(DType::BF16), latent * 2) << name;
      EXPECT_EQ(s.bytes_per_token(DType::F32), latent * 4) << name;
    }
  }
}

TEST(MoeMlaModels, RealConfigsParseAndSizeTheLatentCache) {
  // DeepSeek-V2-Lite and V3: kv_lora_rank 512 + rope 64 = 576 values per token and layer,
  // against 2 * heads * head dims for the same model with plain multi-head attention.
  for (const char* name : {"DeepSeek-V2-Lite-Chat", "DeepSeek-V3"}) {
    ModelConfig cfg = load_config(real_config(name));
    const LayerCacheSpec s = MlaAttention::cache_spec_for(cfg);
    EXPECT_EQ(s.kind, LayerCacheSpec::Kind::PagedLatent);
    EXPECT_EQ(s.bytes_per_token(DType::BF16), (512 + 64) * 2) << name;
    const int64_t mha = cfg.num_heads * (cfg.get_int("qk_nope_head_dim") + cfg.get_int("qk_rope_head_dim") +
                                         cfg.get_int("v_head_dim")) * 2;
    EXPECT_GT(mha, 8 * s.bytes_per_token(DType::BF16)) << name;  // V2-Lite 8.9x, V3 71x
  }
  for (const char* name : {"Qwen3-30B-A3B", "Qwen3-30B-A3B-FP8"}) {
    ModelConfig cfg = load_config(real_config(name));
    EXPECT_EQ(cfg.architecture, "Qwen3MoeForCausalLM");
    EXPECT_EQ(cfg.get_int("num_experts"), 128);
  }
  EXPECT_EQ(load_config(real_config("Qwen3-30B-A3B-FP8")).quant.block_n, 128);
}

TEST(MoeMlaModels, DummyReducedDepthGivesFiniteLogits) {
  // Real shapes of a DeepSeek-V3-style MoE layer would need GBs; the tiny configs with dummy
  // weights exercise the dummy (stacked, fp8) expert path end to end.
  OpContext ctx(cpu());
  for (const char* name : {"qwen3moe-tiny", "deepseekv2-tiny", "deepseekv3fp8-tiny"}) {
    ModelLoadOptions lo;
    lo.path = fixture(name);
    lo.load_format = "dummy";
    lo.num_layers_override = 2;
    auto model = load_model(lo, ctx);
    SingleSequence seq(*model, ctx, 8);
    Tensor l = seq.feed({1, 2, 3, 4, 5}, true);
    for (int64_t i = 0; i < l.numel(); ++i) ASSERT_TRUE(std::isfinite(l.ptr<float>()[i])) << name;
    Tensor d = seq.feed({6}, false);
    for (int64_t i = 0; i < d.numel(); ++i) ASSERT_TRUE(std::isfinite(d.ptr<float>()[i])) << name;
  }
}

namespace {
// Rewrites a fixture with per-expert tensors into the fused layout of newer transformers
// exports: experts.gate_up_proj [E, 2I, H] (gate rows first) and experts.down_proj [E, H, I].
std::string write_fused_copy(const std::string& src_name) {
  namespace fs = std::filesystem;
  const std::string src = fixture(src_name);
  const fs::path dir = fs::temp_directory_path() / ("portllm_fused_" + src_name);
  fs::create_directories(dir);
  fs::copy_file(src + "/config.json", dir / "config.json", fs::copy_options::overwrite_existing);
  fs::copy_file(src + "/reference.safetensors", dir / "reference.safetensors", fs::copy_options::overwrite_existing);
  Checkpoint ck = Checkpoint::open_dir(src);
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<char>>> out;  // name -> (shape, bytes)
  std::map<std::string, std::vector<std::pair<int64_t, std::string>>> fused;        // new name -> parts
  for (const auto& name : ck.names()) {
    const auto pos = name.find(".experts.");
    if (pos == std::string::npos) {
      Tensor t = ck.tensor(name);
      out[name] = {t.shape_vec(), std::vector<char>(static_cast<const char*>(t.data), static_cast<const char*>(t.data) + t.nbytes())};
      continue;
    }
    const std::string base = name.substr(0, pos) + ".experts.";
    const std::string rest = name.substr(pos + 9);  // "<e>.<proj>.weight"
    const int64_t e = std::stoll(rest.substr(0, rest.find('.')));
    const std::string proj = rest.substr(rest.find('.') + 1);
    fused[base + (proj == "down_proj.weight" ? "down_proj" : "gate_up_proj")].push_back(
        {e * 2 + (proj == "up_proj.weight" ? 1 : 0), name});
  }
  for (auto& [name, parts] : fused) {
    std::sort(parts.begin(), parts.end());
    Tensor first = ck.tensor(parts[0].second);
    const int64_t per = name.find("gate_up") != std::string::npos ? 2 : 1;
    const int64_t E = int64_t(parts.size()) / per;
    std::vector<char> bytes;
    for (auto& [key, n] : parts) {
      Tensor t = ck.tensor(n);
      bytes.insert(bytes.end(), static_cast<const char*>(t.data), static_cast<const char*>(t.data) + t.nbytes());
    }
    out[name] = {{E, first.size(0) * per, first.size(1)}, std::move(bytes)};
  }
  nlohmann::ordered_json header;
  size_t off = 0;
  for (auto& [name, v] : out) {
    header[name] = {{"dtype", "BF16"}, {"shape", v.first}, {"data_offsets", {off, off + v.second.size()}}};
    off += v.second.size();
  }
  std::string h = header.dump();
  std::ofstream f(dir / "model.safetensors", std::ios::binary);
  const uint64_t n = h.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << h;
  for (auto& [name, v] : out) f.write(v.second.data(), std::streamsize(v.second.size()));
  return dir.string();
}
}  // namespace

TEST(MoeMlaModels, FusedExpertTensorsLoadToTheSameModel) {
  const std::string dir = write_fused_copy("qwen3moe-tiny");
  OpContext ctx(cpu());
  ModelLoadOptions lo;
  lo.path = dir;
  auto model = load_model(lo, ctx);
  Reference ref = read_reference(dir);
  const int64_t T = int64_t(ref.tokens.size()), V = ref.logits.size(1);
  SingleSequence seq(*model, ctx, T);
  Tensor l = seq.feed(ref.tokens, true);
  double diff = 0;
  for (int64_t i = 0; i < T * V; ++i) diff = std::max(diff, double(std::abs(l.ptr<float>()[i] - ref.logits.ptr<float>()[i])));
  EXPECT_LE(diff, 1e-3);
}
