#include "engine_test_util.h"

#include <random>

namespace portllm::test {

std::vector<std::vector<int32_t>> varied_prompts(int count, int min_len, int max_len, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < count; ++i) {
    const int n = std::uniform_int_distribution<int>(min_len, max_len)(rng);
    std::vector<int32_t> p{1};  // BOS, like real prompts of stories260K
    for (int j = 1; j < n; ++j) p.push_back(std::uniform_int_distribution<int32_t>(3, int32_t(vocab - 1))(rng));
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace portllm::test
