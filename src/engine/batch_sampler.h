// One step's sampling: the next token of every row of the step's logits [B, V], on the device
// that holds them. Rows are sampled by the SAMPLE op (ops/op_args_sample.h), so a GPU step
// uploads the rows' parameters and penalty lists once and downloads B int32 ids; rows that
// want logprobs take the host sampler (sample_token) on host copies of just their logits.
// On the CPU the logits are host memory and nothing is copied.
#pragma once
#include <span>
#include <vector>

#include "engine/sampler.h"
#include "ops/op_args_sample.h"
#include "ops/registry.h"

namespace portllm {

struct SampleRow {
  const SamplingParams* params = nullptr;
  SamplerState* state = nullptr;
  std::span<const int32_t> stop_ids;  // masked while state->num_output < params->min_tokens
};

// logits: [rows.size(), V] f32 on ctx's device, row i for rows[i]; adjusted in place. Updates
// each row's SamplerState exactly as sample_token does (RNG counter, penalties, num_output).
std::vector<SampleResult> sample_rows(OpContext& ctx, const Tensor& logits, std::span<const SampleRow> rows);

// The SAMPLE op's inputs for rows sampled there: the row's parameters and its adjustment
// entries (bias, min_tokens mask, repetition, presence/frequency), appended to `entries`.
SampleRowParams sample_row_params(const SampleRow& row);
void append_sample_adjustments(const SampleRow& row, std::vector<int32_t>& entries);

}  // namespace portllm
