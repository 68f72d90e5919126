// Model loading end to end on the CPU: the dense fixtures match transformers' logits, the
// embedded stories260K continues its prompt exactly as transformers did, and a missing,
// unexpected or mis-shaped tensor is an error that names it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "core/error.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "runtime/single_sequence.h"

#include "../common/model_fixtures.h"

using namespace portllm;
using namespace portllm::testing;
namespace fs = std::filesystem;

namespace {


// Writes a copy of a model dir whose safetensors holds `entries` (name -> tensor).
std::string write_model(const std::string& src_dir, const std::string& tag,
                        const std::vector<std::pair<std::string, Tensor>>& entries) {
  const fs::path dir = fs::temp_directory_path() / ("portllm_loader_" + tag);
  fs::create_directories(dir);
  fs::copy_file(fs::path(src_dir) / "config.json", dir / "config.json", fs::copy_options::overwrite_existing);
  nlohmann::ordered_json header;
  size_t off = 0;
  for (auto& [name, t] : entries) {
    const char* st = t.dtype == DType::BF16 ? "BF16" : t.dtype == DType::F32 ? "F32" : "F16";
    header[name] = {{"dtype", st}, {"shape", t.shape_vec()}, {"data_offsets", {off, off + t.nbytes()}}};
    off += t.nbytes();
  }
  const std::string h = header.dump();
  std::ofstream f(dir / "model.safetensors", std::ios::binary);
  const uint64_t n = h.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << h;
  for (auto& [name, t] : entries) f.write(static_cast<const char*>(t.data), std::streamsize(t.nbytes()));
  return dir.string();
}

std::string load_error(const std::string& dir) {
  OpContext ctx(cpu());
  ModelLoadOptions o;
  o.path = dir;
  try {
    load_model(o, ctx);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Loader, DenseFixturesMatchTransformers) {
  for (const char* name : {"llama3-tiny", "qwen2-tiny", "qwen3-tiny"}) {
    OpContext ctx(cpu());
    ModelLoadOptions o;
    o.path = fixture(name);
    auto model = load_model(o, ctx);
    auto ref = SafetensorsFile::open(fixture(name) + "/reference.safetensors");
    Tensor tokens = ref->tensor("tokens"), logits = ref->tensor("logits");
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < tokens.numel(); ++i) ids.push_back(int32_t(tokens.ptr<int64_t>()[i]));
    SingleSequence seq(*model, ctx, int64_t(ids.size()));
    Tensor got = seq.feed(ids, true);
    double max_diff = 0;
    for (int64_t i = 0; i < logits.numel(); ++i)
      max_diff = std::max(max_diff, double(std::abs(got.ptr<float>()[i] - logits.ptr<float>()[i])));
    EXPECT_LT(max_diff, 1e-3) << name;
  }
}

TEST(Loader, Stories260KGreedyContinuationIsTokenIdentical) {
  const std::string dir = std::string(PORTLLM_SOURCE_DIR) + "/models/stories260K";
  OpContext ctx(cpu());
  ModelLoadOptions o;
  o.path = dir;
  auto model = load_model(o, ctx);
  auto ref = SafetensorsFile::open(dir + "/reference.safetensors");
  Tensor tokens = ref->tensor("tokens");
  const int64_t prompt_len = ref->tensor("prompt_len").ptr<int64_t>()[0];
  std::vector<int32_t> want;
  for (int64_t i = 0; i < tokens.numel(); ++i) want.push_back(int32_t(tokens.ptr<int64_t>()[i]));
  SingleSequence seq(*model, ctx, int64_t(want.size()));
  std::vector<int32_t> got(want.begin(), want.begin() + prompt_len), feed = got;
  while (got.size() < want.size()) {
    Tensor l = seq.feed(feed, false);
    int32_t best = 0;
    for (int32_t j = 1; j < int32_t(l.size(1)); ++j)
      if (l.ptr<float>()[j] > l.ptr<float>()[best]) best = j;
    got.push_back(best);
    feed = {best};
  }
  EXPECT_EQ(got, want);
}

TEST(Loader, MissingUnexpectedAndMisshapedTensorsAreNamed) {
  const std::string src = fixture("llama3-tiny");
  auto st = SafetensorsFile::open(src + "/model.safetensors");
  std::vector<std::pair<std::string, Tensor>> all;
  for (auto& [name, e] : st->entries()) all.emplace_back(name, st->tensor(name));

  auto without = all;
  std::erase_if(without, [](auto& p) { return p.first == "model.layers.1.mlp.down_proj.weight"; });
  std::string err = load_error(write_model(src, "missing", without));
  EXPECT_NE(err.find("missing tensor 'model.layers.1.mlp.down_proj.weight'"), std::string::npos) << err;

  auto extra = all;
  extra.emplace_back("model.layers.0.self_attn.mystery.weight", all[0].second);
  err = load_error(write_model(src, "extra", extra));
  EXPECT_NE(err.find("unexpected tensor 'model.layers.0.self_attn.mystery.weight'"), std::string::npos) << err;

  auto misshaped = all;
  for (auto& [name, t] : misshaped)
    if (name == "model.norm.weight") t = t.slice(0, 0, t.size(0) - 1);
  err = load_error(write_model(src, "shape", misshaped));
  EXPECT_NE(err.find("'model.norm.weight' has shape [63]"), std::string::npos) << err;
  EXPECT_NE(err.find("model.safetensors"), std::string::npos) << err;
}

TEST(Loader, DummyWeightsBuildRealShapesAtReducedDepth) {
  OpContext ctx(cpu());
  ModelLoadOptions o;
  o.path = std::string(PORTLLM_TEST_DATA) + "/configs/Qwen3-0.6B";
  o.load_format = "dummy";
  o.num_layers_override = 1;
  auto model = load_model(o, ctx);
  EXPECT_EQ(model->config().num_layers, 1);
  SingleSequence seq(*model, ctx, 8);
  Tensor l = seq.feed({1, 2, 3}, false);
  EXPECT_EQ(l.size(1), 151936);
  for (int64_t i = 0; i < l.numel(); ++i) ASSERT_TRUE(std::isfinite(l.ptr<float>()[i]));
}

namespace {
// Writes `entries` as a sharded checkpoint: two safetensors files and the index.
std::string write_sharded(const std::string& src_dir, const std::vector<std::pair<std::string, Tensor>>& entries) {
  const fs::path dir = fs::temp_directory_path() / "portllm_loader_sharded";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(fs::path(src_dir) / "config.json", dir / "config.json");
  nlohmann::ordered_json index;
  for (int shard = 0; shard < 2; ++shard) {
    const std::string fname = "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
    nlohmann::ordered_json header;
    size_t off = 0;
    std::vector<const Tensor*> mine;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (int(i % 2) != shard) continue;
      const auto& [name, t] = entries[i];
      header[name] = {{"dtype", t.dtype == DType::BF16 ? "BF16" : "F32"}, {"shape", t.shape_vec()},
                      {"data_offsets", {off, off + t.nbytes()}}};
      off += t.nbytes();
      mine.push_back(&t);
      index["weight_map"][name] = fname;
    }
    const std::string h = header.dump();
    std::ofstream f(dir / fname, std::ios::binary);
    const uint64_t n = h.size();
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << h;
    for (const Tensor* t : mine) f.write(static_cast<const char*>(t->data), std::streamsize(t->nbytes()));
  }
  std::ofstream(dir / "model.safetensors.index.json") << index.dump(2);
  return dir.string();
}
}  // namespace

TEST(Loader, ShardedCheckpointGivesTheSameLogits) {
  const std::string src = fixture("qwen2-tiny");
  auto st = SafetensorsFile::open(src + "/model.safetensors");
  std::vector<std::pair<std::string, Tensor>> all;
  for (auto& [name, e] : st->entries()) all.emplace_back(name, st->tensor(name));
  const std::string dir = write_sharded(src, all);
  auto run = [&](const std::string& path) {
    OpContext ctx(cpu());
    ModelLoadOptions o;
    o.path = path;
    auto model = load_model(o, ctx);
    SingleSequence seq(*model, ctx, 8);
    return seq.feed({1, 5, 9, 200}, true);
  };
  Tensor a = run(src), b = run(dir);
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.ptr<float>()[i], b.ptr<float>()[i]);
}

TEST(Loader, ShardSpecGivesEachRankItsSlice) {
  ModelConfig cfg = ModelConfig::from_file(fixture("llama3-tiny") + "/config.json");
  WeightLoader w(fixture("llama3-tiny"), "auto", cfg, cpu());
  const std::string name = "model.layers.0.mlp.down_proj.weight";  // [64, 160]
  Tensor full = w.load_host(name, {64, 160});
  for (int dim : {0, 1})
    for (int rank : {0, 1}) {
      Tensor part = w.load(name, {64, 160}, ShardSpec{dim, rank, 2});
      const int64_t rows = dim == 0 ? 32 : 64, cols = dim == 0 ? 160 : 80;
      ASSERT_EQ(part.shape_vec(), (std::vector<int64_t>{rows, cols}));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t fr = dim == 0 ? rank * 32 + r : r, fc = dim == 1 ? rank * 80 + c : c;
          ASSERT_EQ(static_cast<const uint16_t*>(part.data)[r * part.strides[0] + c],
                    static_cast<const uint16_t*>(full.data)[fr * 160 + fc]);
        }
    }
  EXPECT_THROW(w.load(name, {64, 160}, ShardSpec{1, 0, 3}), Error);  // 160 is not divisible by 3
}

// The RoPE table is made once per model (WeightLoader::derived), not once per layer. On the CPU
// dummy weights stay in their host buffers; what a layer allocates on the device is its merged
// projections (qkv 4096 x 1024 and gate_up 6144 x 1024, bf16), and the model one table
// (40960 x 128 f32) besides. Per layer, Qwen3-8B's table was 21 MB of device memory each, and its
// host computation most of a dummy load.
TEST(Loader, RopeTableIsSharedByTheLayers) {
  auto allocated_with = [](int layers) {
    OpContext ctx(cpu());
    ModelLoadOptions o;
    o.path = std::string(PORTLLM_TEST_DATA) + "/configs/Qwen3-0.6B";
    o.load_format = "dummy";
    o.num_layers_override = layers;
    const size_t before = ctx.device->memory_stats().allocated;
    auto model = load_model(o, ctx);
    return int64_t(ctx.device->memory_stats().allocated - before);
  };
  const int64_t merged = 2 * (4096 + 6144) * 1024, table = int64_t(40960) * 128 * 4;
  const int64_t one = allocated_with(1), two = allocated_with(2), three = allocated_with(3);
  EXPECT_EQ(one, merged + table);
  EXPECT_EQ(two - one, merged);
  EXPECT_EQ(three - two, merged);
}
