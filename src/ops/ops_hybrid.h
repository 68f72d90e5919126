// Op entry points of the hybrid-model ops (args documented in ops/op_args_hybrid.h).
#pragma once
#include "ops/op_args_hybrid.h"
#include "ops/registry.h"

namespace portllm::ops {

// GDN_CONV_DECODE when max_q_len == 1, else GDN_CONV.
void causal_conv1d(OpContext& ctx, const CausalConv1dArgs& args);
// GDN_RULE_DECODE when max_q_len == 1, else GDN_RULE.
void gated_delta_rule(OpContext& ctx, const GatedDeltaRuleArgs& args);
void gated_rms_norm(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& z,
                    const Tensor& weight, float eps, float weight_offset = 0.f);
void sigmoid_mul(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& gate);

}  // namespace portllm::ops
