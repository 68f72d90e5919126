// --max-model-len against the positions the engine serves: the RoPE table has
// min(max_position_embeddings, 2^18) rows, so the default context stops there and a longer one
// is refused by name instead of reading past the table.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "engine_test_util.h"

using namespace portllm;
namespace fs = std::filesystem;

namespace {
// qwen3-tiny with max_position_embeddings set to `positions`.
std::string tiny_with_positions(int64_t positions) {
  const fs::path src = test::fixture_dir("qwen3-tiny"), dir = fs::temp_directory_path() / "portllm_long_context";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::create_symlink(src / "model.safetensors", dir / "model.safetensors");
  auto cfg = nlohmann::json::parse(read_text_file((src / "config.json").string()));
  cfg["max_position_embeddings"] = positions;
  std::ofstream(dir / "config.json") << cfg.dump();
  return dir.string();
}
}  // namespace

TEST(MaxModelLen, StopsAtTheServedPositions) {
  EngineConfig c = test::small_config(tiny_with_positions(300000));
  EXPECT_EQ(Engine::create(c)->max_model_len(), 262144);
  c.max_model_len = 300000;
  try {
    Engine::create(c);
    ADD_FAILURE() << "a context past the served positions was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the 262144 positions portllm serves"), std::string::npos) << e.what();
  }
  c.max_model_len = 400000;
  EXPECT_THROW(Engine::create(c), Error);  // past max_position_embeddings too
}
