// Shared helpers for the tokenizer tests: the fixture tokenizers (loaded once per process,
// since the real tokenizer.json files take a while to parse) and their oracle cases.
#pragma once
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace portllm::tok::test {

struct Fixture {
  std::string name;
  std::string dir;
  std::string cases_file;
};

// The four real tokenizers from tests/data/tokenizers and stories260K from models/.
inline const std::vector<Fixture>& fixtures() {
  static const std::vector<Fixture> f = {
      {"qwen3", PORTLLM_TEST_DATA "/tokenizers/qwen3", PORTLLM_TEST_DATA "/tokenizers/qwen3/cases.json"},
      {"llama3", PORTLLM_TEST_DATA "/tokenizers/llama3", PORTLLM_TEST_DATA "/tokenizers/llama3/cases.json"},
      {"llama2", PORTLLM_TEST_DATA "/tokenizers/llama2", PORTLLM_TEST_DATA "/tokenizers/llama2/cases.json"},
      {"deepseek_v3", PORTLLM_TEST_DATA "/tokenizers/deepseek_v3",
       PORTLLM_TEST_DATA "/tokenizers/deepseek_v3/cases.json"},
      {"stories260K", PORTLLM_SOURCE_DIR "/models/stories260K",
       PORTLLM_SOURCE_DIR "/models/stories260K/tokenizer_cases.json"},
  };
  return f;
}

inline const Fixture& fixture(const std::string& name) {
  for (const auto& f : fixtures())
    if (f.name == name) return f;
  throw std::runtime_error("no fixture " + name);
}

inline const Tokenizer& load(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& t = cache[name];
  if (!t) t = Tokenizer::from_dir(fixture(name).dir);
  return *t;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(f);
}

inline std::vector<std::string> fixture_names() {
  std::vector<std::string> n;
  for (const auto& f : fixtures()) n.push_back(f.name);
  return n;
}

}  // namespace portllm::tok::test
