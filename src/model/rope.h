// Rotary embedding tables. All scaling variants (linear, llama3, yarn with mscale) are folded
// into a [max_pos, rot_dim] f32 table of cos | sin, so the ROPE kernels stay variant-free.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace portllm {

// Inverse frequencies (rot_dim / 2 of them) and the cos/sin multiplier (yarn attention factor).
struct RopeFrequencies {
  std::vector<double> inv_freq;
  double attention_factor = 1.0;
};

RopeFrequencies rope_frequencies(const RopeConfig& rope, int rot_dim);
// Host f32 tensor [max_pos, rot_dim]: cos(p*f_i)*af for i < rot_dim/2, then sin(p*f_i)*af.
Tensor rope_cos_sin_table(const RopeConfig& rope, int rot_dim, int64_t max_pos);
// yarn's mscale: 0.1 * mscale * ln(scale) + 1 for scale > 1 (DeepSeek folds it into the
// softmax scale too).
double yarn_get_mscale(double scale, double mscale);

}  // namespace portllm
