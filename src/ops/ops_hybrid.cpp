#include "ops/ops_hybrid.h"

#include "ops/ops.h"

namespace portllm::ops {

void causal_conv1d(OpContext& ctx, const CausalConv1dArgs& a) {
  run(ctx, a.desc(a.max_q_len == 1 ? Op::GDN_CONV_DECODE : Op::GDN_CONV), a);
}

void gated_delta_rule(OpContext& ctx, const GatedDeltaRuleArgs& a) {
  run(ctx, a.desc(a.max_q_len == 1 ? Op::GDN_RULE_DECODE : Op::GDN_RULE), a);
}

void gated_rms_norm(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& z,
                    const Tensor& weight, float eps, float weight_offset) {
  GatedRmsNormArgs a{out, x, z, weight, eps, weight_offset};
  run(ctx, a.desc(), a);
}

void sigmoid_mul(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& gate) {
  SigmoidMulArgs a{out, x, gate};
  run(ctx, a.desc(), a);
}

}  // namespace portllm::ops
