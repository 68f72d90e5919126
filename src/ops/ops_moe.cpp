#include "ops/ops_moe.h"

#include "ops/ops.h"

namespace portllm::ops {

Op moe_route_op(const MoeRouteArgs& a) {
  const bool plain = a.n_group <= 1 && a.scoring == MoeScoring::Softmax && !a.bias.defined();
  return plain ? Op::MOE_ROUTE_SOFTMAX : Op::MOE_ROUTE_GROUPED;
}

void moe_route(OpContext& ctx, const MoeRouteArgs& a) { run(ctx, a.desc(moe_route_op(a)), a); }
void moe_permute(OpContext& ctx, const MoePermuteArgs& a) { run(ctx, a.desc(), a); }
void moe_gemm(OpContext& ctx, const MoeGemmArgs& a) { run(ctx, a.desc(), a); }
void moe_combine(OpContext& ctx, const MoeCombineArgs& a) { run(ctx, a.desc(), a); }
void mla_attention(OpContext& ctx, const MlaAttentionArgs& a) { run(ctx, a.desc(), a); }

}  // namespace portllm::ops
