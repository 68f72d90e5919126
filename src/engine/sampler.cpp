#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/sample_math.h"
#include "ops/sample_row.h"

namespace portllm {

TokenLogprob compute_logprobs(std::span<const float> raw, int32_t token, int k) {
  float mx = -std::numeric_limits<float>::infinity();
  for (float x : raw) mx = std::max(mx, x);
  double sum = 0;
  for (float x : raw) sum += std::exp(double(x) - mx);
  const double lse = double(mx) + std::log(sum);
  TokenLogprob out;
  out.id = token;
  out.logprob = float(double(raw[size_t(token)]) - lse);
  if (k > 0) {
    const int64_t V = int64_t(raw.size());
    k = int(std::min<int64_t>(k, V));
    // Partial selection of the k best rows (ties: lower id first).
    std::vector<int32_t> ids(static_cast<size_t>(V));
    for (int64_t i = 0; i < V; ++i) ids[size_t(i)] = int32_t(i);
    auto better = [&](int32_t a, int32_t b) {
      return raw[size_t(a)] != raw[size_t(b)] ? raw[size_t(a)] > raw[size_t(b)] : a < b;
    };
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), better);
    for (int i = 0; i < k; ++i) out.top.emplace_back(ids[size_t(i)], float(double(raw[size_t(ids[size_t(i)])]) - lse));
  }
  return out;
}

SampleResult sample_token(std::span<float> logits, const SamplingParams& p, SamplerState& st,
                          std::span<const int32_t> stop_ids) {
  SampleResult res;
  // vLLM's default logprobs are those of the raw model output, before any processing.
  std::vector<float> raw;
  if (p.logprobs >= 0) raw.assign(logits.begin(), logits.end());
  process_logits(logits, p, st.penalties, st.num_output, stop_ids);
  const double u = sampling::uniform_at(st.seed, st.counter++);
  // The SAMPLE op's row function (ops/sample_row.h): greedy, or the filters then a draw over the
  // survivors in id order, so host rows and device rows follow one definition.
  res.token = sampling::sample_adjusted_row(logits, p.temperature, p.min_p, p.top_k, p.top_p, u);
  if (p.logprobs >= 0) res.logprob = compute_logprobs(raw, res.token, p.logprobs);
  st.penalties.observe(p, res.token);
  ++st.num_output;
  return res;
}

}  // namespace portllm
