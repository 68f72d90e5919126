#include "ops/op_args.h"

namespace portllm {

namespace {
OpDesc make(Op op, DType d0, DType d1 = DType::F32, DType d2 = DType::F32) {
  OpDesc d;
  d.op = op;
  d.dtype[0] = d0;
  d.dtype[1] = d1;
  d.dtype[2] = d2;
  return d;
}
}  // namespace

OpDesc EmbedArgs::desc() const { return make(Op::EMBED, table.dtype, out.dtype); }

OpDesc RmsNormArgs::desc() const {
  auto d = make(Op::RMS_NORM, x.dtype, weight.dtype);
  d.dim[0] = x.size(-1);
  return d;
}

OpDesc AddRmsNormArgs::desc() const {
  auto d = make(Op::ADD_RMS_NORM, x.dtype, weight.dtype);
  d.dim[0] = x.size(-1);
  return d;
}

OpDesc RopeArgs::desc() const {
  auto d = make(Op::ROPE, q.dtype);
  d.dim[0] = rot_dim;
  d.flags = interleaved ? 1u : 0u;
  return d;
}

OpDesc SiluMulArgs::desc() const { return make(Op::SILU_MUL, out.dtype); }
OpDesc AddArgs::desc() const { return make(Op::ADD, out.dtype); }

OpDesc MatmulArgs::desc() const {
  auto d = make(w.dtype == DType::F8E4M3 ? Op::MATMUL_FP8_BLOCK : Op::MATMUL, x.dtype, w.dtype,
                out.dtype);
  d.dim[0] = x.size(0);
  d.dim[1] = w.size(0);
  d.dim[2] = w.size(1);
  d.dim[3] = block_k;
  d.flags = bias.defined() ? 1u : 0u;
  return d;
}

OpDesc BatchedMatmulArgs::desc() const {
  auto d = make(Op::BATCHED_MATMUL, x.dtype, w.dtype, out.dtype);
  d.dim[0] = x.size(1);
  d.dim[1] = w.size(1);
  d.dim[2] = w.size(2);
  d.dim[3] = w.size(0);
  return d;
}

OpDesc KvWriteArgs::desc() const {
  auto d = make(Op::KV_WRITE, k.dtype, DType::F32, k_cache.dtype);
  d.dim[0] = k_cache.size(1);
  return d;
}

OpDesc MatmulSiluMulArgs::desc() const {
  auto d = make(Op::MATMUL_SILU_MUL, x.dtype, w.dtype);
  d.dim[0] = x.size(0);
  d.dim[1] = out.size(1);
  d.dim[2] = x.size(1);
  return d;
}

OpDesc AddRmsNormMatmulArgs::desc() const {
  auto d = make(Op::ADD_RMS_NORM_MATMUL, residual.dtype, w.dtype, out.dtype);
  d.dtype[3] = norm_weight.dtype;
  d.dim[0] = residual.size(0);
  d.dim[1] = out.size(1);
  d.dim[2] = residual.size(1);
  d.flags = (gated ? 1u : 0u) | (bias.defined() ? 2u : 0u) | (h.defined() ? 4u : 0u);
  return d;
}

OpDesc MatmulAddRmsNormArgs::desc() const {
  auto d = make(Op::MATMUL_ADD_RMS_NORM, residual.dtype, w.dtype, h.dtype);
  d.dtype[3] = norm_weight.dtype;
  d.dim[0] = x.size(0);
  d.dim[1] = w.size(0);
  d.dim[2] = w.size(1);
  d.flags = bias.defined() ? 2u : 0u;
  return d;
}

OpDesc QkNormRopeKvWriteArgs::desc() const {
  auto d = make(Op::QK_NORM_ROPE_KV_WRITE, q.dtype, q_norm.defined() ? q_norm.dtype : q.dtype, k_cache.dtype);
  d.dim[0] = q.size(-1);
  d.dim[1] = rot_dim;
  d.dim[2] = k_cache.size(1);
  d.dim[3] = v.size(-1);
  d.flags = (interleaved ? 1u : 0u) | (q_norm.defined() ? 2u : 0u);
  return d;
}

OpDesc AttentionArgs::desc(Op op) const {
  auto d = make(op, q.dtype, DType::F32, k_cache.dtype);
  d.dim[0] = q.size(-1);
  d.dim[1] = k_cache.size(1);
  d.dim[2] = q.size(1) / k_cache.size(2);
  d.dim[3] = v_cache.size(-1);
  return d;
}

OpDesc ArgmaxArgs::desc() const { return make(Op::ARGMAX, x.dtype); }
OpDesc SoftmaxArgs::desc() const { return make(Op::SOFTMAX, x.dtype); }
OpDesc TokenFeedArgs::desc() const { return make(Op::TOKEN_FEED, DType::I32); }

}  // namespace portllm
