// Sampling through the engine: seeded reproducibility independent of the batch, n > 1, stop
// strings across token boundaries, min_tokens, logprobs against the reference logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine_test_util.h"
#include "tokenizer/tokenizer.h"

namespace portllm::test {
namespace {

RequestInput seeded(std::vector<int32_t> ids, uint64_t seed, int max_tokens = 30) {
  RequestInput in;
  in.prompt_ids = std::move(ids);
  in.params.temperature = 0.9f;
  in.params.top_p = 0.95f;
  in.params.top_k = 50;
  in.params.seed = seed;
  in.params.max_tokens = max_tokens;
  in.params.ignore_eos = true;
  return in;
}

TEST(EngineSampling, SeededIsReproducibleAndIndependentOfBatch) {
  auto e = Engine::create(small_config());
  const auto prompts = story_prompts(*e);
  const auto alone = run_all(*e, {seeded(prompts[0], 1234)});
  const auto again = run_all(*e, {seeded(prompts[0], 1234)});
  EXPECT_EQ(alone[0].ids, again[0].ids);
  // The same request among others (different seeds, lengths and sampling settings).
  std::vector<RequestInput> mix;
  for (size_t i = 1; i < prompts.size(); ++i) mix.push_back(seeded(prompts[i], 99 + i, 10 + int(i)));
  mix.insert(mix.begin() + 3, seeded(prompts[0], 1234));
  const auto in_mix = run_all(*e, mix);
  EXPECT_EQ(in_mix[3].ids, alone[0].ids);
  // A different seed gives a different continuation (30 tokens at temperature 0.9).
  const auto other = run_all(*e, {seeded(prompts[0], 4321)});
  EXPECT_NE(other[0].ids, alone[0].ids);
}

TEST(EngineSampling, NSamplesShareThePromptAndDiffer) {
  auto e = Engine::create(small_config());
  auto prompt = story_prompts(*e)[3];  // ~25 tokens: at least one full block to share
  RequestInput in = seeded(prompt, 7, 20);
  in.params.n = 4;
  Collector c;
  c.submit(*e, in);
  const auto res = c.wait()[0];
  ASSERT_EQ(res.size(), 4u);
  for (auto& s : res) {
    EXPECT_EQ(s.ids.size(), 20u);
    EXPECT_EQ(s.reason, FinishReason::Length);
  }
  EXPECT_NE(res[0].ids, res[1].ids);
  EXPECT_GT(res[1].cached_tokens, 0);  // forked from sample 0's blocks
  EXPECT_EQ(e->stats().num_free_kv_blocks, e->stats().num_kv_blocks);
  // Greedy n = 3: all samples equal the single greedy continuation.
  RequestInput g = greedy(prompt, 15);
  g.params.n = 3;
  Collector c2;
  c2.submit(*e, g);
  const auto gres = c2.wait()[0];
  const auto single = run_all(*e, {greedy(prompt, 15)});
  for (auto& s : gres) EXPECT_EQ(s.ids, single[0].ids);
}

TEST(EngineSampling, StopStringAcrossTokensIsNotEmitted) {
  auto e = Engine::create(small_config());
  const auto prompt = e->tokenizer().encode("Once upon a time", true);
  const auto full = run_all(*e, {greedy(prompt, 60)})[0];
  const std::string text = full.text;
  // Pick a stop string that spans a token boundary: the end of one token's text and the start
  // of the next one.
  const std::vector<std::string>& pieces = full.pieces;  // one update per token
  ASSERT_EQ(pieces.size(), full.ids.size());
  size_t pos = 0, k = 0;
  for (; k + 1 < pieces.size(); ++k) {
    pos += pieces[k].size();
    if (k >= 8 && pieces[k].size() >= 2 && pieces[k + 1].size() >= 2) break;
  }
  ASSERT_LT(k + 1, pieces.size());
  const std::string stop = text.substr(pos - 2, 4);
  ASSERT_EQ(text.find(stop), pos - 2) << "stop string '" << stop << "' occurs earlier";
  RequestInput in = greedy(prompt, 60);
  in.params.stop = {"zzzz-never", stop};
  const auto r = run_all(*e, {in})[0];
  EXPECT_EQ(r.reason, FinishReason::Stop);
  EXPECT_EQ(r.stop_reason, stop);
  EXPECT_EQ(r.text, text.substr(0, pos - 2));
  EXPECT_EQ(r.ids.size(), k + 2);  // the token that completed the stop string is the last one
  EXPECT_EQ(e->stats().num_free_kv_blocks, e->stats().num_kv_blocks);
}

TEST(EngineSampling, EosStopsUnlessIgnoredAndMinTokens) {
  auto e = Engine::create(small_config());
  const auto prompt = e->tokenizer().encode("Once upon a time", true);
  // stories260K (llama2.c) separates stories with BOS and never samples EOS (id 2) on its own:
  // a logit bias makes EOS the greedy choice.
  RequestInput eos = greedy(prompt, 10, /*ignore_eos=*/false);
  eos.params.logit_bias = {{2, 100.f}};
  const auto r = run_all(*e, {eos})[0];
  EXPECT_EQ(r.reason, FinishReason::Stop);
  EXPECT_EQ(r.ids, std::vector<int32_t>{2});
  EXPECT_EQ(r.text, "");  // the EOS token has no text
  // ignore_eos: runs to max_tokens
  eos.params.ignore_eos = true;
  const auto r2 = run_all(*e, {eos})[0];
  EXPECT_EQ(r2.reason, FinishReason::Length);
  EXPECT_EQ(r2.ids.size(), 10u);
  // min_tokens masks EOS until reached
  eos.params.ignore_eos = false;
  eos.params.min_tokens = 3;
  const auto r3 = run_all(*e, {eos})[0];
  EXPECT_EQ(r3.reason, FinishReason::Stop);
  ASSERT_EQ(r3.ids.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_NE(r3.ids[size_t(i)], 2);
  EXPECT_EQ(r3.ids[3], 2);
  // stop_token_ids: stop at the first occurrence of the greedy output's 10th token
  const auto plain = run_all(*e, {greedy(prompt, 50)})[0];
  const int32_t stop_id = plain.ids[10];
  const size_t first = size_t(std::find(plain.ids.begin(), plain.ids.end(), stop_id) - plain.ids.begin());
  RequestInput s = greedy(prompt, 50);
  s.params.stop_token_ids = {stop_id};
  const auto r4 = run_all(*e, {s})[0];
  EXPECT_EQ(r4.reason, FinishReason::Stop);
  EXPECT_EQ(r4.ids.size(), first + 1);
  EXPECT_EQ(r4.ids.back(), stop_id);
}

double ref_logprob(const Reference& ref, int row, int32_t id) {
  const float* l = ref.logits.data() + size_t(row) * size_t(ref.vocab);
  double mx = l[0];
  for (int64_t i = 1; i < ref.vocab; ++i) mx = std::max<double>(mx, l[i]);
  double s = 0;
  for (int64_t i = 0; i < ref.vocab; ++i) s += std::exp(l[i] - mx);
  return l[id] - mx - std::log(s);
}

TEST(EngineSampling, LogprobsEqualReferenceLogSoftmax) {
  for (const std::string& dir : {stories_dir(), fixture_dir("qwen3-tiny"), fixture_dir("llama3-tiny")}) {
    const Reference ref = load_reference(dir);
    auto e = Engine::create(small_config(dir));
    std::vector<RequestInput> ins;
    for (int k = ref.prompt_len; k < int(ref.tokens.size()); k += 3) {
      RequestInput in = greedy(std::vector<int32_t>(ref.tokens.begin(), ref.tokens.begin() + k), 1);
      in.params.logprobs = 5;
      ins.push_back(in);
    }
    const auto out = run_all(*e, ins);
    for (size_t i = 0; i < out.size(); ++i) {
      const int row = ref.prompt_len + 3 * int(i) - 1;
      ASSERT_EQ(out[i].logprobs.size(), 1u);
      const TokenLogprob& lp = out[i].logprobs[0];
      EXPECT_EQ(lp.id, out[i].ids[0]);
      EXPECT_NEAR(lp.logprob, ref_logprob(ref, row, lp.id), 2e-3) << dir << " row " << row;
      ASSERT_EQ(lp.top.size(), 5u);
      for (size_t j = 0; j < lp.top.size(); ++j) {
        EXPECT_NEAR(lp.top[j].second, ref_logprob(ref, row, lp.top[j].first), 2e-3);
        if (j) {
          EXPECT_GE(lp.top[j - 1].second, lp.top[j].second);
        }
      }
    }
  }
}

}  // namespace
}  // namespace portllm::test
