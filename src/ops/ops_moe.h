// Entry points of the MoE and MLA ops (args documented in ops/op_args_moe.h).
#pragma once
#include "ops/op_args_moe.h"
#include "ops/registry.h"

namespace portllm::ops {

// MOE_ROUTE_SOFTMAX when a.n_group <= 1 and scoring is softmax without bias; else GROUPED.
void moe_route(OpContext& ctx, const MoeRouteArgs& a);
void moe_permute(OpContext& ctx, const MoePermuteArgs& a);
void moe_gemm(OpContext& ctx, const MoeGemmArgs& a);
void moe_combine(OpContext& ctx, const MoeCombineArgs& a);
void mla_attention(OpContext& ctx, const MlaAttentionArgs& a);

// The op a router configuration runs as.
Op moe_route_op(const MoeRouteArgs& a);

}  // namespace portllm::ops
