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
void moe_down_combine(OpContext& ctx, const MoeDownCombineArgs& a);
void mla_attention(OpContext& ctx, const MlaAttentionArgs& a);

// The op a router configuration runs as.
Op moe_route_op(const MoeRouteArgs& a);

// Stacked weights of one expert projection: w [E, N, K], fp8 scales [E, N/block_n, K/block_k].
struct MoeExpertWeights {
  Tensor w, scale;
  int block_n = 0, block_k = 0;
};

// A MoE layer's experts after routing (SwiGLU experts, gate|up stacked in one projection):
//   out[t] = shared[t] (if defined) + sum_j topk_weights[t, j] * down_e(silu(gate_e x) * up_e x),
// e = topk_ids[t, j]. out may be the same tensor as shared.
struct MoeExpertsArgs {
  Tensor out;                       // [T, H]
  Tensor x;                         // [T, H]
  Tensor topk_ids, topk_weights;    // [T, k] i32 / f32
  MoeExpertWeights gate_up, down;   // [E, 2I, H] and [E, H, I]
  Tensor shared;                    // [T, H] optional
};

// Runs the experts as two launches, MOE_GEMM in gather mode (no permutation) then
// MOE_DOWN_COMBINE, when the device has non-reference kernels for both at this size (their
// supports() decide which batches they pay for): with the SwiGLU in the first GEMM's epilogue
// (MoeGemmArgs::swiglu, MoeDownCombineArgs::activated) when both kernels take that, else in the
// down kernel; otherwise as the op sequence MOE_PERMUTE, MOE_GEMM, SILU_MUL, MOE_GEMM,
// MOE_COMBINE. Model code calls this and never learns which.
void moe_experts(OpContext& ctx, const MoeExpertsArgs& a);

}  // namespace portllm::ops
