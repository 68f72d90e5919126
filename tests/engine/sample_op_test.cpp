// The SAMPLE op against the host sampler: on many random rows and parameters (penalties, bias,
// min_tokens, every filter, ties, -inf), BatchSampler on the CPU backend (the op's CPU kernel),
// the op's reference kernel and sample_token pick the same token and leave the same sampler
// state. Plus the definition's two choices: the draw walks survivors in id order, and ties at
// a top-k / top-p cut keep the lowest ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "../common/model_fixtures.h"
#include "engine/batch_sampler.h"
#include "ops/registry.h"
#include "ops/sample_math.h"
#include "ops/sample_row.h"

namespace portllm {
namespace {

struct RowCase {
  SamplingParams p;
  SamplerState st;
  std::vector<int32_t> stop;
};

RowCase random_row(std::mt19937_64& g, int64_t V) {
  auto pick = [&](auto... v) {
    const std::vector<std::common_type_t<decltype(v)...>> xs{v...};
    return xs[size_t(g() % xs.size())];
  };
  RowCase c;
  SamplingParams& p = c.p;
  p.temperature = pick(0.f, 0.3f, 0.7f, 1.f, 1.5f);
  p.top_k = pick(0, 0, 1, 5, 40, int(V) + 3);
  p.top_p = pick(1.f, 1.f, 0.95f, 0.5f, 0.05f);
  p.min_p = pick(0.f, 0.f, 0.05f, 0.2f);
  p.repetition_penalty = pick(1.f, 1.f, 1.3f, 0.8f);
  p.presence_penalty = pick(0.f, 0.f, 0.5f);
  p.frequency_penalty = pick(0.f, 0.f, 0.3f);
  p.min_tokens = pick(0, 0, 3);
  for (int i = 0, n = int(g() % 4); i < n; ++i) p.logit_bias[int32_t(g() % uint64_t(V + 2)) - 1] = pick(-5.f, 2.5f, 100.f);
  for (int i = 0, n = int(g() % 3); i < n; ++i) c.stop.push_back(int32_t(g() % uint64_t(V)));
  c.st.seed = g();
  c.st.counter = g() % 1000;
  std::vector<int32_t> prompt;
  for (int i = 0, n = int(g() % 20); i < n; ++i) prompt.push_back(int32_t(g() % uint64_t(V)));
  c.st.penalties.init(p, prompt, V);
  for (int i = 0, n = int(g() % 6); i < n; ++i) {  // some tokens already generated
    c.st.penalties.observe(p, int32_t(g() % uint64_t(V)));
    ++c.st.num_output;
  }
  return c;
}

std::vector<float> random_logits(std::mt19937_64& g, int64_t V) {
  std::vector<float> l(static_cast<size_t>(V));
  const int style = int(g() % 4);
  std::normal_distribution<float> n(0.f, style == 0 ? 1.f : 4.f);
  for (auto& x : l) {
    x = style == 3 ? float(int(g() % 9) - 4) / 2.f : n(g);  // style 3: few values, many ties
    if (style == 2 && g() % 5 == 0) x = -std::numeric_limits<float>::infinity();
  }
  return l;
}

TEST(SampleOp, OpCpuKernelReferenceAndHostSamplerAgree) {
  OpContext ctx(testing::cpu());
  std::mt19937_64 g(20261130);
  const KernelInfo* ref = KernelRegistry::instance().reference(Op::SAMPLE);
  ASSERT_NE(ref, nullptr);
  int rows_checked = 0;
  std::set<int32_t> distinct;
  for (int trial = 0; trial < 150; ++trial) {
    const int64_t V = std::vector<int64_t>{7, 50, 1000, 5003}[size_t(trial % 4)];
    const int64_t B = 1 + int64_t(g() % 6);
    std::vector<RowCase> cases;
    std::vector<float> logits;
    for (int64_t b = 0; b < B; ++b) {
      cases.push_back(random_row(g, V));
      if (b == 1) cases.back().p.logprobs = 2;  // this row takes the host path inside BatchSampler
      auto l = random_logits(g, V);
      logits.insert(logits.end(), l.begin(), l.end());
    }
    // The host sampler, row by row.
    std::vector<RowCase> host = cases;
    std::vector<float> host_logits = logits;
    std::vector<int32_t> want;
    for (int64_t b = 0; b < B; ++b) {
      std::span<float> row(host_logits.data() + b * V, size_t(V));
      want.push_back(sample_token(row, host[size_t(b)].p, host[size_t(b)].st, host[size_t(b)].stop).token);
    }
    // The reference kernel on the op's packed inputs (before any state moves).
    std::vector<int32_t> params, offsets{0}, entries;
    for (int64_t b = 0; b < B; ++b) {
      const SampleRow row{&cases[size_t(b)].p, &cases[size_t(b)].st, cases[size_t(b)].stop};
      const SampleRowParams rp = sample_row_params(row);
      const int32_t* w = reinterpret_cast<const int32_t*>(&rp);
      params.insert(params.end(), w, w + kSampleParamWords);
      append_sample_adjustments(row, entries);
      offsets.push_back(int32_t(entries.size() / kSampleAdjWords));
    }
    entries.resize(std::max<size_t>(entries.size(), kSampleAdjWords));
    std::vector<float> ref_logits = logits;
    std::vector<int32_t> ref_out(size_t(B), -7);
    SampleArgs ra;
    ra.out = Tensor::view_of(ref_out.data(), DType::I32, {B});
    ra.logits = Tensor::view_of(ref_logits.data(), DType::F32, {B, V});
    ra.params = Tensor::view_of(params.data(), DType::I32, {B, kSampleParamWords});
    ra.adj_offsets = Tensor::view_of(offsets.data(), DType::I32, {B + 1});
    ra.adj = Tensor::view_of(entries.data(), DType::I32, {int64_t(entries.size()) / kSampleAdjWords, kSampleAdjWords});
    ref->run(&ra, *ctx.stream);
    // BatchSampler: the op's CPU kernel (and sample_token for the logprobs row).
    std::vector<SampleRow> rows;
    for (auto& c : cases) rows.push_back({&c.p, &c.st, c.stop});
    const auto got = BatchSampler(ctx).sample(Tensor::view_of(logits.data(), DType::F32, {B, V}), rows);
    for (int64_t b = 0; b < B; ++b) {
      SCOPED_TRACE(::testing::Message() << "trial " << trial << " row " << b << " V " << V);
      EXPECT_EQ(got[size_t(b)].token, want[size_t(b)]);
      EXPECT_EQ(ref_out[size_t(b)], want[size_t(b)]);
      EXPECT_EQ(got[size_t(b)].logprob.has_value(), b == 1);
      const SamplerState &a = cases[size_t(b)].st, &h = host[size_t(b)].st;
      EXPECT_EQ(a.counter, h.counter);
      EXPECT_EQ(a.num_output, h.num_output);
      EXPECT_EQ(a.penalties.output_counts, h.penalties.output_counts);
      EXPECT_EQ(a.penalties.seen_ids, h.penalties.seen_ids);
      for (int64_t i = 0; i < V; ++i) {  // the adjusted logits, written back in place
        const float x = logits[size_t(b * V + i)], y = host_logits[size_t(b * V + i)];
        if (std::isinf(y)) EXPECT_EQ(x, y);
        else EXPECT_FLOAT_EQ(x, y);
      }
      ++rows_checked;
      distinct.insert(want[size_t(b)]);
    }
  }
  EXPECT_GT(rows_checked, 400);
  EXPECT_GT(distinct.size(), 100u);  // not a degenerate sweep
}

SamplingParams sampling(float t, int top_k = 0, float top_p = 1.f) {
  SamplingParams p;
  p.temperature = t;
  p.top_k = top_k;
  p.top_p = top_p;
  return p;
}

TEST(SampleOp, DrawWalksSurvivorsInIdOrder) {
  // softmax(1, 3, 2): in id order the CDF steps are p0, p0+p1; in rank order p1, p1+p2.
  const double z = std::exp(1.) + std::exp(3.) + std::exp(2.);
  const double p0 = std::exp(1.) / z, p1 = std::exp(3.) / z;
  int differing = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const double u = sampling::uniform_at(seed, 0);
    const int32_t by_id = u < p0 ? 0 : u < p0 + p1 ? 1 : 2;
    const int32_t by_rank = u < p1 ? 1 : u < 1 - p0 ? 2 : 0;
    differing += by_id != by_rank;
    std::vector<float> l{1.f, 3.f, 2.f};
    SamplerState st;
    st.seed = seed;
    EXPECT_EQ(sample_token(l, sampling(1.f), st, {}).token, by_id) << "seed " << seed;
  }
  EXPECT_GT(differing, 10);
}

TEST(SampleOp, TiesAtACutKeepTheLowestIds) {
  OpContext ctx(testing::cpu());
  std::set<int32_t> seen_k, seen_p;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    // top_k = 2 among three equal maxima: ids 1 and 2 survive, 4 does not.
    std::vector<float> a{0.f, 5.f, 5.f, 1.f, 5.f};
    // top_p = 0.5 over four equal values: mass 2 of 4 is reached after ids 0 and 1.
    std::vector<float> b{2.f, 2.f, 2.f, 2.f};
    SamplingParams pk = sampling(1.f, 2), pp = sampling(1.f, 0, 0.5f);
    SamplerState s1, s2;
    s1.seed = s2.seed = seed;
    std::vector<SampleRow> rows{{&pk, &s1, {}}};
    seen_k.insert(BatchSampler(ctx).sample(Tensor::view_of(a.data(), DType::F32, {1, 5}), rows)[0].token);
    rows = {{&pp, &s2, {}}};
    seen_p.insert(BatchSampler(ctx).sample(Tensor::view_of(b.data(), DType::F32, {1, 4}), rows)[0].token);
  }
  EXPECT_EQ(seen_k, (std::set<int32_t>{1, 2}));
  EXPECT_EQ(seen_p, (std::set<int32_t>{0, 1}));
}

// The host sampler builds only as much of the rank order as the top-p prefix needs (chunks of 64,
// 256, 1024, ...). A flat row whose 0.9 mass takes ~2700 of 3000 entries, ties included, crosses
// several chunks; the survivors must be the prefix a full sort gives.
TEST(SampleOp, TopPPrefixBeyondTheFirstChunksMatchesAFullSort) {
  std::vector<float> l(3000);
  for (size_t i = 0; i < l.size(); ++i) l[i] = float((i * 7919) % 1000) * 1e-3f;  // ties: each value thrice
  const float top_p = 0.9f;
  std::vector<int32_t> ids;
  std::vector<double> rel;
  sampling::filter_candidates(l, 1.f, 0.f, 0, top_p, ids, rel);

  std::vector<int32_t> rank(l.size());
  for (size_t i = 0; i < rank.size(); ++i) rank[i] = int32_t(i);
  std::sort(rank.begin(), rank.end(), [&](int32_t a, int32_t b) {
    return l[size_t(a)] != l[size_t(b)] ? l[size_t(a)] > l[size_t(b)] : a < b;
  });
  const float mx = *std::max_element(l.begin(), l.end());
  auto r = [&](int32_t i) { return std::exp(double(l[size_t(i)] - mx)); };
  double total = 0, cum = 0;
  for (int32_t i : rank) total += r(i);
  size_t keep = 0;
  while (keep < rank.size() && (keep == 0 || cum < double(top_p) * total)) cum += r(rank[keep++]);
  std::vector<int32_t> want(rank.begin(), rank.begin() + ptrdiff_t(keep));
  std::sort(want.begin(), want.end());
  ASSERT_GT(keep, size_t(64 + 256 + 1024));  // the case really crosses chunks
  EXPECT_EQ(ids, want);
  ASSERT_EQ(rel.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(rel[i], r(ids[i]));
}

}  // namespace
}  // namespace portllm
