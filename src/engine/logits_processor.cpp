#include "engine/logits_processor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace portllm {

namespace {
constexpr float kSamplingEps = 1e-5f;  // vLLM's: temperatures below this are greedy
}

bool uses_penalties(const SamplingParams& p) {
  return p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
}

bool is_greedy(const SamplingParams& p) { return p.temperature < kSamplingEps; }

void PenaltyState::init(const SamplingParams& p, std::span<const int32_t> prompt, int64_t vocab) {
  if (p.repetition_penalty == 1.0f) return;
  seen.assign(size_t(vocab), 0);
  for (int32_t t : prompt)
    if (t >= 0 && t < vocab && !seen[size_t(t)]) {
      seen[size_t(t)] = 1;
      seen_ids.push_back(t);
    }
}

void PenaltyState::observe(const SamplingParams& p, int32_t token) {
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) ++output_counts[token];
  if (!seen.empty() && token >= 0 && size_t(token) < seen.size() && !seen[size_t(token)]) {
    seen[size_t(token)] = 1;
    seen_ids.push_back(token);
  }
}

void process_logits(std::span<float> l, const SamplingParams& p, const PenaltyState& st,
                    int num_output, std::span<const int32_t> stop_ids) {
  const int64_t V = int64_t(l.size());
  for (const auto& [id, bias] : p.logit_bias)
    if (id >= 0 && id < V) l[size_t(id)] += bias;
  if (num_output < p.min_tokens)
    for (int32_t id : stop_ids)
      if (id >= 0 && id < V) l[size_t(id)] = -std::numeric_limits<float>::infinity();
  if (p.repetition_penalty != 1.0f)
    for (int32_t id : st.seen_ids) {
      float& x = l[size_t(id)];
      x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty;
    }
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f)
    for (const auto& [id, c] : st.output_counts)
      if (id >= 0 && id < V) l[size_t(id)] -= p.frequency_penalty * float(c) + p.presence_penalty;
}

Candidates filter_candidates(std::span<const float> l, const SamplingParams& p) {
  const int64_t V = int64_t(l.size());
  const double inv_t = 1.0 / double(p.temperature);
  float mx = -std::numeric_limits<float>::infinity();
  for (float x : l) mx = std::max(mx, x);
  // Relative probabilities exp((l - max) / T); min-p keeps those >= min_p * the best one (1.0).
  const double min_rel = p.min_p > 0 ? double(p.min_p) : 0.0;
  Candidates c;
  c.ids.reserve(size_t(V));
  std::vector<double> rel(static_cast<size_t>(V));
  for (int64_t i = 0; i < V; ++i) {
    const double r = std::isinf(l[size_t(i)]) ? 0.0 : std::exp((double(l[size_t(i)]) - mx) * inv_t);
    rel[size_t(i)] = r;
    if (r > 0 && r >= min_rel) c.ids.push_back(int32_t(i));
  }
  auto better = [&](int32_t a, int32_t b) {
    return rel[size_t(a)] != rel[size_t(b)] ? rel[size_t(a)] > rel[size_t(b)] : a < b;
  };
  const int64_t k = p.top_k > 0 ? std::min<int64_t>(p.top_k, int64_t(c.ids.size())) : int64_t(c.ids.size());
  if (k < int64_t(c.ids.size())) {
    std::nth_element(c.ids.begin(), c.ids.begin() + k, c.ids.end(), better);
    c.ids.resize(size_t(k));
  }
  // Sorting is only needed for top-p (and is cheap after top-k); otherwise id order is as
  // deterministic and avoids an O(V log V) sort per token.
  if (p.top_p < 1.0f || k < int64_t(V)) std::sort(c.ids.begin(), c.ids.end(), better);
  c.probs.reserve(c.ids.size());
  double total = 0;
  for (int32_t id : c.ids) total += rel[size_t(id)];
  if (p.top_p < 1.0f) {
    // Keep the smallest best-first prefix whose mass reaches top_p (at least one token).
    double cum = 0;
    size_t keep = 0;
    while (keep < c.ids.size() && (keep == 0 || cum < double(p.top_p) * total)) cum += rel[size_t(c.ids[keep++])];
    c.ids.resize(keep);
  }
  for (int32_t id : c.ids) c.probs.push_back(rel[size_t(id)]);
  return c;
}

}  // namespace portllm
