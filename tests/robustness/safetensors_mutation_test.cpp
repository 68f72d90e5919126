// Tiny fixture models whose model.safetensors header is mutated (the data section kept): each
// load is accepted (and runs a few tokens) or refused with an error naming the file; no other
// exception, failed invariant or crash. The checkpoints cover bf16/f32 and FP8 block weights.
#include <gtest/gtest.h>

#include <cstring>

#include "core/mapped_file.h"
#include "json_mutator.h"
#include "limits.h"
#include "outcome.h"
#include "tiny_model.h"

using namespace portllm;
using namespace portllm::robustness;
namespace fs = std::filesystem;

namespace {

constexpr int kMutantsPerModel = 80;

// The file's header JSON and its data section.
std::pair<nlohmann::json, std::string> split(const std::string& bytes) {
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return {nlohmann::json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

std::string join(const nlohmann::json& header, const std::string& data) {
  const std::string h = dump(header);
  const uint64_t n = h.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + h + data;
}

}  // namespace

TEST(Robustness, MutatedSafetensorsHeaders) {
  cap_address_space();
  Tally tally;
  uint64_t seed = 40000;
  for (const char* model : {"qwen3-tiny", "deepseekv3fp8-tiny", "qwen3next-tiny"}) {
    const fs::path src = fs::path(PORTLLM_TEST_DATA) / "models" / model;
    ScratchDir dir(std::string("portllm_st_mutants_") + model);
    fs::copy_file(src / "config.json", dir.path / "config.json");
    const auto [header, data] = split(read_text_file((src / "model.safetensors").string()));
    dir.write("model.safetensors", join(header, data));
    ASSERT_NO_THROW(load_and_run(dir.path.string())) << model;
    for (int i = 0; i < mutants(kMutantsPerModel); ++i) {
      JsonMutator m(seed++);
      dir.write("model.safetensors", join(m.mutate(header, 1 + i % 2), data));
      tally.run([&] { load_and_run(dir.path.string()); }, dir.path.string(), std::string(model) + "\n" + m.log());
    }
  }
  expect_contract(tally, 2, 200);  // most header mutations must break the file
}
