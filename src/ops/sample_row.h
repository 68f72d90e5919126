// The SAMPLE op's row function on host memory (semantics in ops/op_args_sample.h): used by the
// CPU kernel and by the engine's host sampler (engine/sampler.h), so both pick the same token.
// The reference kernel (ops/ref/sample_ref.cpp) is an independent, slower implementation.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "ops/op_args_sample.h"

namespace portllm::sampling {

// Step 1 on one row: entries are (id, kind, payload) triples, applied kind by kind.
void apply_adjustments(std::span<float> row, const SampleRowParams& p, std::span<const int32_t> entries);

// First index of the maximum (0 for an empty or all-NaN row).
int32_t argmax_first(std::span<const float> row);

// Step 3: the survivors in increasing id order with their relative probabilities rel. Empty when
// the row maximum is not finite or nothing passes min-p.
void filter_candidates(std::span<const float> row, float temperature, float min_p, int top_k, float top_p,
                       std::vector<int32_t>& ids, std::vector<double>& rel);

// Step 4: the first id whose cumulative rel exceeds u * total (the last if none); -1 if empty.
int32_t pick_candidate(std::span<const int32_t> ids, std::span<const double> rel, double u);

// Steps 2-4 on an adjusted row.
int32_t sample_adjusted_row(std::span<const float> row, float temperature, float min_p, int top_k, float top_p,
                            double u);

}  // namespace portllm::sampling
