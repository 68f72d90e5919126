// SwiGLU MLP: fused gate|up projection, silu(gate) * up, down projection.
#pragma once
#include <string>

#include "model/linear.h"

namespace portllm {

struct GatedMlp {
  Linear gate_up, down;
  int64_t intermediate = 0;

  static GatedMlp load(WeightLoader& w, const std::string& prefix, int64_t hidden, int64_t intermediate);
  Tensor forward(OpContext& ctx, const Tensor& x) const;  // [T, hidden] -> [T, hidden]
};

}  // namespace portllm
