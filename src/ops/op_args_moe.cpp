#include "ops/op_args_moe.h"

namespace portllm {

OpDesc MoeRouteArgs::desc(Op op) const {
  OpDesc d;
  d.op = op;
  d.dtype[0] = logits.dtype;
  d.dtype[1] = bias.defined() ? bias.dtype : DType::F32;
  d.dim[0] = logits.size(1);
  d.dim[1] = top_k;
  d.dim[2] = n_group;
  d.dim[3] = topk_group;
  d.flags = (renormalize ? 1u : 0u) | (scoring == MoeScoring::Sigmoid ? 2u : 0u) |
            (group_score == MoeGroupScore::Top2Sum ? 4u : 0u) | (bias.defined() ? 8u : 0u);
  return d;
}

OpDesc MoePermuteArgs::desc() const {
  OpDesc d;
  d.op = Op::MOE_PERMUTE;
  d.dtype[0] = x.dtype;
  d.dim[0] = num_experts;
  d.dim[1] = align;
  return d;
}

OpDesc MoeGemmArgs::desc() const {
  OpDesc d;
  d.op = Op::MOE_GEMM;
  d.dtype[0] = x.dtype;
  d.dtype[1] = w.dtype;
  d.dtype[2] = out.dtype;
  d.dim[0] = w.size(0);
  d.dim[1] = w.size(1);
  d.dim[2] = w.size(2);
  d.dim[3] = block_k;
  d.flags = (topk_ids.defined() ? 1u : 0u) | (swiglu ? 2u : 0u);
  return d;
}

OpDesc MoeDownCombineArgs::desc() const {
  OpDesc d;
  d.op = Op::MOE_DOWN_COMBINE;
  d.dtype[0] = gate_up.dtype;
  d.dtype[1] = w.dtype;
  d.dtype[2] = out.dtype;
  d.dim[0] = topk_ids.size(0);
  d.dim[1] = w.size(1);
  d.dim[2] = w.size(2);
  d.dim[3] = block_k;
  const int64_t k = topk_ids.size(1);
  d.flags = (shared.defined() ? 1u : 0u) | (activated ? 2u : 0u) | (uint32_t(k < 255 ? k : 255) << 8);
  return d;
}

OpDesc MoeCombineArgs::desc() const {
  OpDesc d;
  d.op = Op::MOE_COMBINE;
  d.dtype[0] = y.dtype;
  d.dtype[1] = out.dtype;
  d.flags = shared.defined() ? 1u : 0u;
  return d;
}

OpDesc MlaAttentionArgs::desc() const {
  OpDesc d;
  d.op = Op::MLA_ATTENTION;
  d.dtype[0] = q_latent.dtype;
  d.dtype[2] = latent_cache.dtype;
  d.dim[0] = q_latent.size(-1);
  d.dim[1] = latent_cache.size(1);
  d.dim[2] = q_latent.size(1);
  d.dim[3] = q_pe.size(-1);
  d.flags = max_q_len == 1 ? 1u : 0u;
  return d;
}

}  // namespace portllm
