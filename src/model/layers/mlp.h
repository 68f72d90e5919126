// SwiGLU MLP: fused gate|up projection, silu(gate) * up, down projection.
#pragma once
#include <string>

#include "model/layers/normed_input.h"
#include "model/linear.h"

namespace portllm {

struct GatedMlp {
  Linear gate_up, down;
  int64_t intermediate = 0;

  static GatedMlp load(WeightLoader& w, const std::string& prefix, int64_t hidden, int64_t intermediate);
  Tensor forward(OpContext& ctx, const Tensor& x) const;  // [T, hidden] -> [T, hidden]
  // The norm may run inside the gate_up GEMV; the down projection is left pending (SublayerOut).
  SublayerOut forward(OpContext& ctx, NormedInput& x) const;

 private:
  // One float matrix without bias: MATMUL_SILU_MUL (SiLU-and-mul as the GEMM's epilogue where the
  // device has the kernel) applies. Otherwise (fp8, parts, bias) gate_up's own forward, then SILU_MUL.
  bool plain_gate_up() const;
};

}  // namespace portllm
