// A linear layer's weights as loaded (float or fp8 with scales), and its forward through the
// MATMUL / MATMUL_FP8_BLOCK ops. Merged layers (q|k|v, gate|up) are loaded by concatenating
// the checkpoint tensors along the output dim, so one GEMM serves them all.
#pragma once
#include <string>
#include <vector>

#include "model/weight_loader.h"
#include "ops/registry.h"

namespace portllm {

struct Linear {
  Tensor weight;  // [out, in] (this rank's slice)
  Tensor bias;    // [out] or undefined
  Tensor scale;   // fp8: weight_scale_inv [ceil(out/bn), ceil(in/bk)] or per-tensor [1]
  int block_n = 0, block_k = 0;
  int64_t in = 0, out = 0;
  // A merge whose fp8 parts cannot share one scale grid (a part's rows are not a multiple of the
  // scale block, e.g. DeepSeek-V2-Lite's 10944-row dense MLP): the parts stay separate and
  // forward() runs each into its column slice of y. Empty for an ordinary (merged) layer.
  std::vector<Linear> parts;

  // One float matrix (not fp8, not split into parts): the form the fused GEMV epilogues and
  // prologues (MATMUL_SILU_MUL, ADD_RMS_NORM_MATMUL) take.
  bool single_float_matrix() const { return parts.empty() && !scale.defined() && weight.dtype != DType::F8E4M3; }

  // y[M, out] = x[M, in] @ W^T (+ b)
  void forward(OpContext& ctx, const Tensor& y, const Tensor& x) const;
  Tensor forward(OpContext& ctx, const Tensor& x) const;  // allocates y

  static Linear load(WeightLoader& w, const std::string& prefix, int64_t in, int64_t out, bool bias,
                     ShardSpec shard = {});
  // Concatenation of several layers that read the same input (outputs stacked in order).
  static Linear load_merged(WeightLoader& w, const std::vector<std::string>& prefixes, int64_t in,
                            const std::vector<int64_t>& outs, bool bias);
};

}  // namespace portllm
