// Picks the next token of one sequence from one row of host f32 logits. Each sequence has its own
// counter-based RNG (seed, number of tokens sampled so far): one uniform number per sampled
// token, so a seeded request gives the same tokens whatever else is in the batch.
#pragma once
#include <cstdint>
#include <optional>
#include <span>

#include "engine/engine.h"
#include "engine/logits_processor.h"

namespace portllm {

struct SamplerState {
  uint64_t seed = 0;
  uint64_t counter = 0;  // tokens sampled so far: the RNG position
  int num_output = 0;
  PenaltyState penalties;
};

struct SampleResult {
  int32_t token = 0;
  std::optional<TokenLogprob> logprob;  // when params.logprobs >= 0
};

// `logits` is modified in place. stop_ids are masked while num_output < min_tokens.
SampleResult sample_token(std::span<float> logits, const SamplingParams& p, SamplerState& st,
                          std::span<const int32_t> stop_ids);

// The RNG itself (uniform_at, mix64) is ops/sample_math.h: one copy for every backend.

// log-softmax of the raw logits: the sampled token's logprob and the top k (best first).
TokenLogprob compute_logprobs(std::span<const float> raw, int32_t token, int k);

}  // namespace portllm
