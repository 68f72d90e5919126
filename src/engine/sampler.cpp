#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace portllm {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double uniform_at(uint64_t seed, uint64_t counter) {
  const uint64_t r = mix64(mix64(seed) ^ (counter * 0xd1b54a32d192ed03ULL));
  return double(r >> 11) * 0x1.0p-53;
}

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
  const double u = uniform_at(st.seed, st.counter++);
  if (is_greedy(p)) {
    int64_t best = 0;
    for (int64_t i = 1; i < int64_t(logits.size()); ++i)
      if (logits[size_t(i)] > logits[size_t(best)]) best = i;
    res.token = int32_t(best);
  } else {
    Candidates c = filter_candidates(logits, p);
    if (c.ids.empty()) {  // everything masked: fall back to the best raw row
      res.token = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    } else {
      double total = 0;
      for (double x : c.probs) total += x;
      const double target = u * total;
      double cum = 0;
      size_t i = 0;
      for (; i + 1 < c.ids.size(); ++i) {
        cum += c.probs[i];
        if (cum > target) break;
      }
      res.token = c.ids[i];
    }
  }
  if (p.logprobs >= 0) res.logprob = compute_logprobs(raw, res.token, p.logprobs);
  st.penalties.observe(p, res.token);
  ++st.num_output;
  return res;
}

}  // namespace portllm
