#include "engine/logits_processor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/sample_math.h"
#include "ops/sample_row.h"

namespace portllm {


bool uses_penalties(const SamplingParams& p) {
  return p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
}

bool is_greedy(const SamplingParams& p) { return p.temperature < sampling::kSamplingEps; }

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
  Candidates c;
  sampling::filter_candidates(l, p.temperature, p.min_p, p.top_k, p.top_p, c.ids, c.probs);
  return c;
}

}  // namespace portllm
