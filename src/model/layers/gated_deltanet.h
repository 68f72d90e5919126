// Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5/3.6 "linear_attention" layers):
//   one projection -> [q | k | v | z | b | a]  (Qwen3.5 stores in_proj_qkv, in_proj_z, in_proj_b,
//   in_proj_a; Qwen3-Next stores in_proj_qkvz and in_proj_ba grouped per key head, which the
//   loader reorders into the same column layout, so forward is one code path)
//   -> causal depthwise conv1d + SiLU over q|k|v (state: the last K-1 inputs)
//   -> gated delta rule with l2-normalized q/k, beta = sigmoid(b),
//      g = -exp(A_log) * softplus(a + dt_bias), each q/k head shared by Hv/Hk value heads
//      (state: [Hv, Dk, Dv] per request)
//   -> gated RMSNorm per value head: rmsnorm(o) * weight * silu(z) -> out_proj.
// Both states live in the runtime's state slots (LayerCacheSpec::Kind::Recurrent).
#pragma once
#include <string>

#include "model/cache_spec.h"
#include "model/config.h"
#include "model/forward_batch.h"
#include "model/layers/normed_input.h"
#include "model/linear.h"

namespace portllm {

struct GatedDeltaNet {
  Linear in_proj;   // hidden -> [q (Hk*Dk) | k (Hk*Dk) | v (Hv*Dv) | z (Hv*Dv) | b (Hv) | a (Hv)]
  Linear out_proj;  // Hv*Dv -> hidden
  Tensor conv_w;    // [conv_dim, K]
  Tensor A_log, dt_bias;  // [Hv]
  Tensor norm;            // [Dv] (plain weight, not 1 + w)
  int64_t Hk = 0, Hv = 0, Dk = 0, Dv = 0, K = 0;
  float eps = 1e-6f;

  int64_t conv_dim() const { return 2 * Hk * Dk + Hv * Dv; }
  // prefix: the layer's linear_attn module. fused_qkvz: Qwen3-Next's in_proj_qkvz/in_proj_ba.
  static GatedDeltaNet load(WeightLoader& w, const std::string& prefix, const ModelConfig& cfg, bool fused_qkvz);
  // state[0]: conv state [K-1, conv_dim]; state[1]: delta-rule state [Hv, Dk, Dv]; f32.
  LayerCacheSpec cache_spec() const;
  // x: the normalized input, unevaluated (the norm may run inside the in_proj GEMV); out_proj is
  // left pending where it is one float matrix.
  SublayerOut forward(OpContext& ctx, const ForwardBatch& b, LayerCache& cache, NormedInput& x) const;
};

}  // namespace portllm
