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

using namespace portllm;
namespace fs = std::filesystem;

namespace {
Device& cpu() {
  register_builtin_backends();
  return *BackendRegistry::instance().device("cpu");
}

std::string fixture(const std::string& name) { return std::string(PORTLLM_TEST_DATA) + "/models/" + name; }

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
