// Mutated config.json files of the tiny fixture models, loaded with their real weights on the
// CPU: each load is accepted (and then runs a few tokens) or refused with an error naming the
// file or field; no other exception, failed invariant or crash.
#include <gtest/gtest.h>

#include "core/mapped_file.h"
#include "json_mutator.h"
#include "limits.h"
#include "outcome.h"
#include "tiny_model.h"

using namespace portllm;
using namespace portllm::robustness;
namespace fs = std::filesystem;

namespace {
constexpr int kMutantsPerModel = 120;

// Every top-level field of the fixture models' and the real seed models' configs, as donors.
std::vector<std::pair<std::string, std::string>> config_fields() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* area : {"models", "configs"})
    for (const auto& e : fs::directory_iterator(fs::path(PORTLLM_TEST_DATA) / area)) {
      const fs::path c = e.path() / "config.json";
      if (!fs::exists(c)) continue;
      const auto j = nlohmann::json::parse(read_text_file(c.string()));  // items() of a temporary would dangle
      for (auto& [k, v] : j.items()) out.emplace_back(k, v.dump());
    }
  return out;
}
}  // namespace

TEST(Robustness, MutatedModelConfigs) {
  cap_address_space();
  Tally tally;
  uint64_t seed = 1;
  const auto donors = config_fields();
  for (const auto& entry : fs::directory_iterator(fs::path(PORTLLM_TEST_DATA) / "models")) {
    const fs::path src = entry.path();
    if (!fs::exists(src / "config.json")) continue;
    ASSERT_NO_THROW(load_and_run(src.string())) << src;
    ScratchDir dir("portllm_config_mutants_" + src.filename().string());
    for (const auto& f : fs::directory_iterator(src))
      if (f.path().extension() == ".safetensors") fs::create_symlink(f.path(), dir.path / f.path().filename());
    const auto config = nlohmann::json::parse(read_text_file((src / "config.json").string()));
    for (int i = 0; i < mutants(kMutantsPerModel); ++i) {
      JsonMutator m(seed++);
      m.set_donors(donors);
      dir.write("config.json", dump(m.mutate(config, 1 + i % 3), 1));
      tally.run([&] { load_and_run(dir.path.string()); }, dir.path.string(), src.filename().string() + "\n" + m.log());
    }
  }
  expect_contract(tally, 100, 500);
}
