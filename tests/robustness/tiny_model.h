// Shared by the robustness tests that load the tiny fixture models: a scratch model directory
// and "load it, then run a few tokens".
#pragma once
#include <filesystem>
#include <fstream>
#include <string>

#include "../common/model_fixtures.h"
#include "model/model.h"
#include "runtime/single_sequence.h"

namespace portllm::robustness {

// Loads DIR's model on the CPU and, when that succeeds, feeds five tokens then one (prefill and
// decode through the paged cache).
inline void load_and_run(const std::string& dir) {
  OpContext ctx(testing::cpu());
  ModelLoadOptions lo;
  lo.path = dir;
  auto model = load_model(lo, ctx);
  const int32_t V = int32_t(model->config().vocab_size);
  SingleSequence seq(*model, ctx, 16, 16);
  seq.feed({1 % V, 2 % V, 3 % V, 4 % V, 5 % V}, false);
  seq.feed({6 % V}, false);
}

// A fresh directory under the temp dir, removed by the destructor.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& name) : path(std::filesystem::temp_directory_path() / name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  void write(const std::string& file, const std::string& bytes) const {
    std::ofstream(path / file, std::ios::binary) << bytes;
  }
};

}  // namespace portllm::robustness
