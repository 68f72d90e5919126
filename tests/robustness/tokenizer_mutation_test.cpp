// Mutated tokenizer.json and tokenizer_config.json of the fixture tokenizers: each is accepted
// (and then encodes and decodes a text with special tokens, digits, CJK and invalid UTF-8) or
// refused with an error naming the source; no other exception, failed invariant or crash.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/mapped_file.h"
#include "json_mutator.h"
#include "limits.h"
#include "outcome.h"
#include "tokenizer/tokenizer.h"

using namespace portllm;
using namespace portllm::robustness;
namespace fs = std::filesystem;

namespace {

constexpr int kMutantsPerFile = 30;
const char* kSource = "mutant/tokenizer.json";

void encode_decode(const tok::Tokenizer& t) {
  const std::string text = "Hello, world! 12345 <|im_end|> <s> \xe4\xbd\xa0\xe5\xa5\xbd \xff\xfe  \n\t end";
  for (bool special : {false, true}) {
    const std::vector<int32_t> ids = t.encode(text, special);
    (void)t.decode(ids, !special);
  }
  const int32_t V = t.vocab_size();
  std::vector<int32_t> all = {0, V - 1, V / 2};
  (void)t.decode(all, false);
  (void)t.id_to_token(V - 1);
}

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(read_text_file(p.string())); }

// Donors: the pipeline components of every fixture tokenizer.json (a Llama 2 tokenizer meets
// Qwen3's pre-tokenizer), and the fields of every tokenizer_config.json.
struct Donors {
  std::vector<std::pair<std::string, std::string>> tokenizer, config;
};

Donors donors(const fs::path& root) {
  Donors d;
  for (const auto& e : fs::directory_iterator(root)) {
    if (fs::exists(e.path() / "tokenizer.json")) {
      const auto tj = read_json(e.path() / "tokenizer.json");
      for (const char* k : {"normalizer", "pre_tokenizer", "post_processor", "decoder"})
        if (tj.contains(k)) d.tokenizer.emplace_back(k, tj[k].dump());
    }
    if (fs::exists(e.path() / "tokenizer_config.json")) {
      const auto cfg = read_json(e.path() / "tokenizer_config.json");
      for (auto& [k, v] : cfg.items()) d.config.emplace_back(k, v.dump());
    }
  }
  return d;
}

}  // namespace

TEST(Robustness, MutatedTokenizers) {
  cap_address_space();
  const fs::path root = fs::path(PORTLLM_TEST_DATA) / "tokenizers";
  Tally tally;
  uint64_t seed = 1000;
  const Donors donor = donors(root);
  for (const auto& entry : fs::directory_iterator(root)) {
    const fs::path dir = entry.path();
    if (!fs::exists(dir / "tokenizer.json")) continue;
    const nlohmann::json tj = read_json(dir / "tokenizer.json");
    const nlohmann::json cfg = fs::exists(dir / "tokenizer_config.json") ? read_json(dir / "tokenizer_config.json")
                                                                         : nlohmann::json::object();
    ASSERT_NO_THROW(encode_decode(*tok::Tokenizer::from_json(tj, cfg, kSource))) << dir;
    const std::string name = dir.filename().string();
    for (int i = 0; i < mutants(kMutantsPerFile); ++i) {
      JsonMutator m(seed++);
      m.set_donors(donor.tokenizer);
      const nlohmann::json mutant = m.mutate(tj, 1 + i % 2);
      tally.run([&] { encode_decode(*tok::Tokenizer::from_json(mutant, cfg, kSource)); }, "tokenizer",
                name + " tokenizer.json\n" + m.log());
    }
    for (int i = 0; i < mutants(kMutantsPerFile); ++i) {
      JsonMutator m(seed++);
      m.set_donors(donor.config);
      const nlohmann::json mutant = m.mutate(cfg, 1 + i % 2);
      tally.run([&] { encode_decode(*tok::Tokenizer::from_json(tj, mutant, kSource)); }, "tokenizer",
                name + " tokenizer_config.json\n" + m.log());
    }
  }
  expect_contract(tally, 50, 50);
}
