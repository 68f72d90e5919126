// Greedy decoding through the engine: equal to transformers' reference continuation, and the
// same tokens however requests are batched, chunked, cached, preempted or paged.
#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace portllm::test {
namespace {

constexpr int kMaxTokens = 40;

std::vector<std::vector<int32_t>> one_at_a_time(const EngineConfig& cfg) {
  auto e = Engine::create(cfg);
  std::vector<std::vector<int32_t>> out;
  for (auto& p : story_prompts(*e)) out.push_back(run_all(*e, {greedy(p, kMaxTokens)})[0].ids);
  return out;
}

std::vector<std::vector<int32_t>> batched(const EngineConfig& cfg) {
  auto e = Engine::create(cfg);
  std::vector<RequestInput> ins;
  for (auto& p : story_prompts(*e)) ins.push_back(greedy(p, kMaxTokens));
  std::vector<std::vector<int32_t>> out;
  for (auto& r : run_all(*e, ins)) {
    EXPECT_EQ(r.reason, FinishReason::Length);
    out.push_back(r.ids);
  }
  EXPECT_EQ(e->stats().num_free_kv_blocks, e->stats().num_kv_blocks);
  return out;
}

const std::vector<std::vector<int32_t>>& baseline() {
  static const auto b = one_at_a_time(small_config());
  return b;
}

TEST(EngineGreedy, MatchesTransformersReference) {
  const Reference ref = load_reference(stories_dir());
  auto e = Engine::create(small_config());
  std::vector<int32_t> prompt(ref.tokens.begin(), ref.tokens.begin() + ref.prompt_len);
  const int n = int(ref.tokens.size()) - ref.prompt_len;
  const auto out = run_all(*e, {greedy(prompt, n)});
  const std::vector<int32_t> expect(ref.tokens.begin() + ref.prompt_len, ref.tokens.end());
  EXPECT_EQ(out[0].ids, expect);
}

TEST(EngineGreedy, BatchedEqualsOneAtATime) {
  const auto& base = baseline();
  for (auto& ids : base) EXPECT_EQ(int(ids.size()), kMaxTokens);
  EXPECT_EQ(batched(small_config()), base);
}

TEST(EngineGreedy, PrefixCachingOnAndOff) {
  EngineConfig on = small_config(), off = small_config();
  off.enable_prefix_caching = false;
  EXPECT_EQ(batched(off), baseline());
  // Twice through one engine: the second round is served from the prefix cache.
  auto e = Engine::create(on);
  std::vector<RequestInput> ins;
  for (auto& p : story_prompts(*e)) ins.push_back(greedy(p, kMaxTokens));
  run_all(*e, ins);
  const auto second = run_all(*e, ins);
  int cached = 0;
  for (size_t i = 0; i < second.size(); ++i) {
    EXPECT_EQ(second[i].ids, baseline()[i]) << "prompt " << i;
    cached += second[i].cached_tokens;
  }
  EXPECT_GT(cached, 0);
  EXPECT_GT(e->stats().prefix_cache_hits, 0);
}

TEST(EngineGreedy, ChunkedPrefillSmallChunks) {
  EngineConfig c = small_config();
  c.chunked_prefill_size = 5;
  EXPECT_EQ(batched(c), baseline());
  EngineConfig nochunk = small_config();
  nochunk.chunked_prefill_size = -1;
  EXPECT_EQ(batched(nochunk), baseline());
}

TEST(EngineGreedy, SurvivesPreemption) {
  EngineConfig c = small_config();
  c.page_size = 16;
  c.num_kv_blocks = 12;  // 192 tokens for 8 sequences of up to ~70: forces preemption
  auto e = Engine::create(c);
  std::vector<RequestInput> ins;
  for (auto& p : story_prompts(*e)) ins.push_back(greedy(p, kMaxTokens));
  std::vector<std::vector<int32_t>> got;
  for (auto& r : run_all(*e, ins)) got.push_back(r.ids);
  EXPECT_EQ(got, baseline());
  EXPECT_GT(e->stats().num_preemptions, 0);
  EXPECT_EQ(e->stats().num_free_kv_blocks, e->stats().num_kv_blocks);
}

TEST(EngineGreedy, PageSizes16And64) {
  for (int page : {16, 64}) {
    EngineConfig c = small_config();
    c.page_size = page;
    c.num_kv_blocks = 4096 / page;
    EXPECT_EQ(batched(c), baseline()) << "page size " << page;
  }
}

TEST(EngineGreedy, FixtureModelsBatchedMatchReferenceWhereMarginsAreClear) {
  // Random-weight fixtures (bf16 weights, f32 compute): teacher-forced continuations in one
  // batch must pick the reference's greedy token wherever its margin is clearly above noise.
  for (const char* name : {"llama3-tiny", "qwen2-tiny", "qwen3-tiny"}) {
    const Reference ref = load_reference(fixture_dir(name));
    auto e = Engine::create(small_config(fixture_dir(name)));
    std::vector<RequestInput> ins;
    for (int k = ref.prompt_len; k < int(ref.tokens.size()); ++k)
      ins.push_back(greedy(std::vector<int32_t>(ref.tokens.begin(), ref.tokens.begin() + k), 1));
    const auto out = run_all(*e, ins);
    int checked = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const int k = ref.prompt_len + int(i);
      const float* row = ref.logits.data() + size_t(k - 1) * size_t(ref.vocab);
      std::vector<float> s(row, row + ref.vocab);
      std::partial_sort(s.begin(), s.begin() + 2, s.end(), std::greater<float>());
      if (s[0] - s[1] < 1e-2f) continue;
      EXPECT_EQ(out[i].ids[0], ref.tokens[size_t(k)]) << name << " position " << k;
      ++checked;
    }
    EXPECT_GT(checked, 10) << name;
  }
}

}  // namespace
}  // namespace portllm::test
