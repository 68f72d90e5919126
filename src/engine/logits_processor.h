// Per-request transformations of one row of host f32 logits before sampling, in vLLM v1's order:
// logit_bias and the min_tokens mask, then the repetition/presence/frequency penalties (state
// kept incrementally in PenaltyState so a step costs O(distinct tokens), not O(sequence)), then
// temperature and the min-p / top-k / top-p filters that pick the candidate set.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"

namespace portllm {

// Token statistics the penalties need, updated once per sampled token.
struct PenaltyState {
  std::unordered_map<int32_t, int> output_counts;  // presence / frequency (outputs only)
  std::vector<uint8_t> seen;                       // repetition: prompt + outputs, by id
  std::vector<int32_t> seen_ids;                   // the ids set in `seen`
  void init(const SamplingParams& p, std::span<const int32_t> prompt, int64_t vocab);
  void observe(const SamplingParams& p, int32_t token);
};

bool uses_penalties(const SamplingParams& p);
bool is_greedy(const SamplingParams& p);

// logit_bias, min_tokens (stop ids masked to -inf while num_output < min_tokens), penalties.
void process_logits(std::span<float> logits, const SamplingParams& p, const PenaltyState& st,
                    int num_output, std::span<const int32_t> stop_ids);

// Temperature then min-p, top-k, top-p (ops/op_args_sample.h defines them; ties at a cut keep the
// lower ids). Returns the surviving token ids in increasing id order with their unnormalized
// probabilities exp((l - max) / T): the order the draw walks, on every backend.
struct Candidates {
  std::vector<int32_t> ids;
  std::vector<double> probs;
};
Candidates filter_candidates(std::span<const float> logits, const SamplingParams& p);

}  // namespace portllm
