// The sampler on hand-made logits: greedy, filters, penalties, bias, min_tokens, logprobs, and
// the counter-based RNG.
#include "engine/sampler.h"
#include "ops/sample_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace portllm {
namespace {

SamplingParams params(float t = 0) {
  SamplingParams p;
  p.temperature = t;
  return p;
}

TEST(Sampler, GreedyPicksFirstMaximum) {
  std::vector<float> l{0.f, 3.f, 1.f, 3.f};
  SamplerState st;
  EXPECT_EQ(sample_token(l, params(), st, {}).token, 1);
  EXPECT_EQ(st.counter, 1u);
  EXPECT_EQ(st.num_output, 1);
}

TEST(Sampler, TopKTopPMinPRestrictCandidates) {
  const std::vector<float> base{0.f, 1.f, 2.f, 3.f, 4.f};
  auto counts = [&](SamplingParams p) {
    std::map<int32_t, int> c;
    SamplerState st;
    st.seed = 42;
    for (int i = 0; i < 2000; ++i) {
      std::vector<float> l = base;
      ++c[sample_token(l, p, st, {}).token];
    }
    return c;
  };
  SamplingParams p = params(1.0f);
  p.top_k = 2;
  auto c = counts(p);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_GT(c[4], c[3]);
  p = params(1.0f);
  p.top_p = 0.5f;  // softmax(0..4): p(4)=0.636 alone reaches 0.5
  c = counts(p);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c[4], 2000);
  p = params(1.0f);
  p.min_p = 0.3f;  // keeps tokens with p >= 0.3 * p(4): e^-1 = 0.37 yes, e^-2 = 0.14 no
  c = counts(p);
  EXPECT_EQ(c.size(), 2u);
  // Plain temperature 1: frequencies follow the softmax.
  c = counts(params(1.0f));
  const double z = 1 + std::exp(1.) + std::exp(2.) + std::exp(3.) + std::exp(4.);
  EXPECT_NEAR(c[4] / 2000.0, std::exp(4.) / z, 0.04);
  EXPECT_NEAR(c[3] / 2000.0, std::exp(3.) / z, 0.04);
}

TEST(Sampler, PenaltiesBiasAndMinTokens) {
  SamplingParams p = params();
  p.repetition_penalty = 2.0f;
  SamplerState st;
  const std::vector<int32_t> prompt{0};
  st.penalties.init(p, prompt, 3);
  std::vector<float> l{3.f, 2.f, -1.f};  // 3 / 2 = 1.5 < 2: token 1 wins
  EXPECT_EQ(sample_token(l, p, st, {}).token, 1);
  EXPECT_FLOAT_EQ(l[0], 1.5f);

  SamplingParams f = params();
  f.frequency_penalty = 1.0f;
  f.presence_penalty = 0.5f;
  SamplerState fs;
  std::vector<float> a{2.f, 1.f};
  EXPECT_EQ(sample_token(a, f, fs, {}).token, 0);
  std::vector<float> b{2.f, 1.f};  // token 0 now: 2 - 1 - 0.5 = 0.5 < 1
  EXPECT_EQ(sample_token(b, f, fs, {}).token, 1);

  SamplingParams bias = params();
  bias.logit_bias = {{2, 10.f}};
  SamplerState bs;
  std::vector<float> c{1.f, 2.f, 0.f};
  EXPECT_EQ(sample_token(c, bias, bs, {}).token, 2);

  SamplingParams mt = params();
  mt.min_tokens = 1;
  SamplerState ms;
  const std::vector<int32_t> stop{0};
  std::vector<float> d{5.f, 1.f};
  EXPECT_EQ(sample_token(d, mt, ms, stop).token, 1);  // stop masked for the first token
  std::vector<float> e{5.f, 1.f};
  EXPECT_EQ(sample_token(e, mt, ms, stop).token, 0);
}

TEST(Sampler, LogprobsAreRawLogSoftmax) {
  std::vector<float> l{1.f, 2.f, 3.f};
  SamplingParams p = params();
  p.logprobs = 2;
  p.logit_bias = {{0, 100.f}};  // changes the choice, not the logprobs
  SamplerState st;
  SampleResult r = sample_token(l, p, st, {});
  EXPECT_EQ(r.token, 0);
  ASSERT_TRUE(r.logprob);
  const double lse = std::log(std::exp(1.) + std::exp(2.) + std::exp(3.));
  EXPECT_NEAR(r.logprob->logprob, 1 - lse, 1e-6);
  ASSERT_EQ(r.logprob->top.size(), 2u);
  EXPECT_EQ(r.logprob->top[0].first, 2);
  EXPECT_NEAR(r.logprob->top[0].second, 3 - lse, 1e-6);
  EXPECT_EQ(r.logprob->top[1].first, 1);
}

TEST(Sampler, RngDependsOnSeedAndCounterOnly) {
  using sampling::uniform_at;
  EXPECT_EQ(uniform_at(7, 3), uniform_at(7, 3));
  EXPECT_NE(uniform_at(7, 3), uniform_at(7, 4));
  EXPECT_NE(uniform_at(7, 3), uniform_at(8, 3));
  for (uint64_t i = 0; i < 1000; ++i) {
    const double u = uniform_at(1, i);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace portllm
