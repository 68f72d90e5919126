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
void moe_down_combine(OpContext& ctx, const MoeDownCombineArgs& a) { run(ctx, a.desc(), a); }
void mla_attention(OpContext& ctx, const MlaAttentionArgs& a) { run(ctx, a.desc(), a); }

void moe_experts(OpContext& ctx, const MoeExpertsArgs& a) {
  const int64_t T = a.x.size(0), H = a.x.size(1), k = a.topk_ids.size(1), E = a.gate_up.w.size(0);
  const int64_t I = a.down.w.size(2), R = T * k;
  // The two-launch paths, SwiGLU in the first GEMM's epilogue first: what each launch reads and
  // writes between them is h [R, I] instead of [gate | up] [R, 2I], and the down kernel's blocks
  // stage h without re-evaluating the SwiGLU (each reads its token's rows again). Kernel choice
  // depends on descriptors only, so they are asked before anything is allocated.
  for (const bool swiglu : {true, false}) {
    const Tensor shape = Tensor::view_of(nullptr, ctx.act_dtype, {R, swiglu ? I : 2 * I});
    MoeGemmArgs g1{shape, a.x, a.gate_up.w, a.gate_up.scale, Tensor(), a.gate_up.block_n, a.gate_up.block_k,
                   a.topk_ids, swiglu};
    MoeDownCombineArgs dc{a.out,      shape,          a.down.w, a.down.scale, a.down.block_n, a.down.block_k,
                          a.topk_ids, a.topk_weights, a.shared, swiglu};
    if (!has_fast_kernel(ctx, g1.desc()) || !has_fast_kernel(ctx, dc.desc())) continue;
    g1.out = dc.gate_up = ctx.act(shape.shape_vec());
    moe_gemm(ctx, g1);
    moe_down_combine(ctx, dc);
    return;
  }

  // The op sequence: [gate | up] rows grouped by expert (R = T*k: the permutation is dense, align 1).
  Tensor gu = ctx.act({R, 2 * I});

  MoePermuteArgs pa;
  pa.x_sorted = ctx.act({R, H});
  pa.sorted_token = ctx.empty(DType::I32, {R});
  pa.dst_row = ctx.empty(DType::I32, {T, k});
  pa.expert_offsets = ctx.empty(DType::I32, {E + 1});
  pa.x = a.x;
  pa.topk_ids = a.topk_ids;
  pa.num_experts = int(E);
  moe_permute(ctx, pa);

  moe_gemm(ctx, MoeGemmArgs{gu, pa.x_sorted, a.gate_up.w, a.gate_up.scale, pa.expert_offsets, a.gate_up.block_n,
                            a.gate_up.block_k, Tensor()});
  Tensor act = ctx.act({R, I});
  silu_mul(ctx, act, gu.slice(1, 0, I), gu.slice(1, I, I));
  Tensor y = ctx.act({R, H});
  moe_gemm(ctx, MoeGemmArgs{y, act, a.down.w, a.down.scale, pa.expert_offsets, a.down.block_n, a.down.block_k,
                            Tensor()});
  moe_combine(ctx, MoeCombineArgs{a.out, y, pa.dst_row, a.topk_weights, a.shared});
}

}  // namespace portllm::ops
