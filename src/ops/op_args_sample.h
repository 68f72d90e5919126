// SAMPLE: the next token of each row of logits, on the device that holds them, so that a step
// downloads B ids instead of B x V floats. The op is the engine's sampler (engine/sampler.h)
// without logprobs; every backend computes the same function of (logits row, row parameters).
//
// Per row r (skipped rows: out[r] = -1, logits untouched):
//  1. Adjustments, in this order over the row's entries adj[adj_offsets[r] .. adj_offsets[r+1]):
//     kind 0 (bias)        l[id] += payload as f32
//     kind 1 (mask)        l[id] = -inf                     (stop ids while num_output < min_tokens)
//     kind 2 (repetition)  l[id] = l > 0 ? l / rep : l * rep (prompt + output tokens)
//     kind 3 (count)       l[id] -= freq * float(payload) + presence (payload = output count)
//     Ids outside [0, V) are ignored. Within one row, the ids of one kind are distinct (kind 1
//     may repeat). The adjusted values are written back into `logits`.
//  2. temperature < kSamplingEps: out = the first index of the row maximum (ARGMAX semantics).
//  3. Otherwise, with mx = max of the row: if mx is not finite, out = argmax as in 2. Else
//     rel(i) = exp((l[i] - mx) / temperature) for finite l[i]; tokens are ranked by
//     (l desc, id asc). The candidates are the finite tokens with rel >= min_p (min_p > 0), then
//     the first top_k of them in rank order (top_k > 0), then the shortest rank prefix whose rel
//     mass reaches top_p * (the mass left after top-k) (top_p < 1; at least one token). Ties at
//     a cut are therefore resolved by lower id first.
//  4. The survivors are walked in increasing id order: with u = uniform_at(seed, counter),
//     out = the first survivor whose cumulative rel exceeds u * (their total mass) (the last one
//     if rounding leaves none). No survivor (min_p > 1): argmax as in 2.
// Backends may differ only by float rounding (exp, summation order); the GPU accumulates masses
// in 2^-s fixed point so its result does not depend on its reduction order.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/tensor.h"
#include "ops/op.h"

namespace portllm {

// One row of SampleArgs::params: 12 32-bit words (an I32 tensor [B, kSampleParamWords]).
struct SampleRowParams {
  float temperature = 1.f;
  float top_p = 1.f;            // >= 1: off
  float min_p = 0.f;            // <= 0: off
  int32_t top_k = 0;            // <= 0: off
  uint32_t seed_lo = 0, seed_hi = 0;
  uint32_t counter_lo = 0, counter_hi = 0;  // the RNG position (tokens sampled so far)
  float repetition_penalty = 1.f;  // used by kind 2 entries
  float presence_penalty = 0.f;    // used by kind 3 entries
  float frequency_penalty = 0.f;   // used by kind 3 entries
  int32_t flags = 0;               // kSampleSkipRow

  uint64_t seed() const { return uint64_t(seed_hi) << 32 | seed_lo; }
  uint64_t counter() const { return uint64_t(counter_hi) << 32 | counter_lo; }
  void set_seed(uint64_t s) { seed_lo = uint32_t(s); seed_hi = uint32_t(s >> 32); }
  void set_counter(uint64_t c) { counter_lo = uint32_t(c); counter_hi = uint32_t(c >> 32); }
};
constexpr int kSampleParamWords = 12;
static_assert(sizeof(SampleRowParams) == kSampleParamWords * 4);
constexpr int32_t kSampleSkipRow = 1;

enum SampleAdjustKind : int32_t { kAdjBias = 0, kAdjMask = 1, kAdjRepetition = 2, kAdjCount = 3 };
constexpr int kSampleAdjWords = 3;  // (token id, kind, payload)

// dtype[0] = logits (f32); dim[0] = V.
struct SampleArgs {
  Tensor out;          // [B] i32
  Tensor logits;       // [B, V] f32, row-strided; adjusted in place
  Tensor params;       // [B, kSampleParamWords] i32 (SampleRowParams)
  Tensor adj_offsets;  // [B + 1] i32, or undefined: no adjustments
  Tensor adj;          // [N, kSampleAdjWords] i32 (payload: f32 bits for kind 0, a count for 3)
  OpDesc desc() const;
  // Row r of params (host memory) as the struct its words are.
  SampleRowParams row_params(int64_t r) const {
    SampleRowParams p;
    std::memcpy(static_cast<void*>(&p), static_cast<const int32_t*>(params.data) + r * params.strides[0], sizeof p);
    return p;
  }
};

}  // namespace portllm
