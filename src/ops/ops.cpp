#include "ops/ops.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace portllm::ops {

void embed(OpContext& ctx, const Tensor& out, const Tensor& table, const Tensor& ids) {
  EmbedArgs a{out, table, ids};
  run(ctx, a.desc(), a);
}

void rms_norm(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& weight, float eps,
              float weight_offset) {
  RmsNormArgs a{out, x, weight, eps, weight_offset};
  run(ctx, a.desc(), a);
}

void add_rms_norm(OpContext& ctx, const Tensor& residual, const Tensor& out, const Tensor& x,
                  const Tensor& weight, float eps, float weight_offset) {
  AddRmsNormArgs a{residual, out, x, weight, eps, weight_offset};
  run(ctx, a.desc(), a);
}

void rope(OpContext& ctx, const Tensor& q, const Tensor& k, const Tensor& positions,
          const Tensor& cos_sin, int rot_dim, bool interleaved) {
  RopeArgs a{q, k, positions, cos_sin, rot_dim, interleaved};
  run(ctx, a.desc(), a);
}

void silu_mul(OpContext& ctx, const Tensor& out, const Tensor& gate, const Tensor& up) {
  SiluMulArgs a{out, gate, up};
  run(ctx, a.desc(), a);
}

void add(OpContext& ctx, const Tensor& out, const Tensor& a_, const Tensor& b) {
  AddArgs a{out, a_, b};
  run(ctx, a.desc(), a);
}

void matmul(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& w,
            const Tensor& bias, const Tensor& w_scale, int block_n, int block_k) {
  MatmulArgs a{out, x, w, bias, w_scale, block_n, block_k};
  run(ctx, a.desc(), a);
}

void matmul_silu_mul(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& w) {
  const MatmulSiluMulArgs a{out, x, w};
  const OpDesc d = a.desc();
  if (has_fast_kernel(ctx, d)) return run(ctx, d, a);
  const int64_t I = out.size(1);
  Tensor gu = ctx.empty(out.dtype, {x.size(0), 2 * I});
  matmul(ctx, gu, x, w);
  silu_mul(ctx, out, gu.slice(1, 0, I), gu.slice(1, I, I));
}

bool add_rms_norm_matmul(OpContext& ctx, const AddRmsNormMatmulArgs& a) {
  const OpDesc d = a.desc();
  if (!has_fast_kernel(ctx, d)) return false;
  run(ctx, d, a);
  return true;
}

bool matmul_add_rms_norm(OpContext& ctx, const MatmulAddRmsNormArgs& a) {
  const OpDesc d = a.desc();
  if (!has_fast_kernel(ctx, d)) return false;
  run(ctx, d, a);
  return true;
}

void batched_matmul(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& w) {
  BatchedMatmulArgs a{out, x, w};
  run(ctx, a.desc(), a);
}

void kv_write(OpContext& ctx, const KvWriteArgs& a) { run(ctx, a.desc(), a); }

void qk_norm_rope_kv_write(OpContext& ctx, const QkNormRopeKvWriteArgs& a) {
  const OpDesc d = a.desc();
  if (has_fast_kernel(ctx, d)) return run(ctx, d, a);
  if (a.q_norm.defined()) {
    rms_norm(ctx, a.q, a.q, a.q_norm, a.eps, a.weight_offset);
    rms_norm(ctx, a.k, a.k, a.k_norm, a.eps, a.weight_offset);
  }
  rope(ctx, a.q, a.k, a.positions, a.cos_sin, a.rot_dim, a.interleaved);
  kv_write(ctx, KvWriteArgs{a.k, a.v, a.k_cache, a.v_cache, a.slot_mapping});
}

std::vector<int32_t> longest_first(const int32_t* lens, int n) {
  std::vector<int32_t> order(size_t(std::max(n, 0)));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return lens[x] > lens[y]; });
  return order;
}

void attention(OpContext& ctx, const AttentionArgs& a) {
  PL_CHECK(!a.work_order.defined() || (a.work_order.dtype == DType::I32 && a.work_order.numel() == a.seq_lens.numel()),
           "attention: work_order must hold {} i32 sequence indices, got {} of {}", a.seq_lens.numel(),
           a.work_order.numel(), dtype_name(a.work_order.dtype));
  run(ctx, a.desc(a.max_q_len == 1 ? Op::ATTN_DECODE : Op::ATTN_PREFILL), a);
}

void argmax(OpContext& ctx, const Tensor& out, const Tensor& x) {
  ArgmaxArgs a{out, x};
  run(ctx, a.desc(), a);
}

void softmax(OpContext& ctx, const Tensor& out, const Tensor& x) {
  SoftmaxArgs a{out, x};
  run(ctx, a.desc(), a);
}

void token_feed(OpContext& ctx, const TokenFeedArgs& a) {
  auto i32 = [](const Tensor& t) { return t.dtype == DType::I32 && t.ndim == 1 && t.is_contiguous(); };
  PL_CHECK(i32(a.out) && i32(a.staged) && a.staged.numel() == a.out.numel() && i32(a.rows) &&
               (!a.sampled.defined() || i32(a.sampled)) && a.ids_offset >= 0 &&
               a.ids_offset + a.rows.numel() <= a.out.numel(),
           "token_feed: expected contiguous i32 out [N], staged [N], rows [n], sampled [R] with ids_offset + n <= N; got "
           "out {}, staged {}, rows {}, ids_offset {}",
           a.out.shape_str(), a.staged.shape_str(), a.rows.shape_str(), a.ids_offset);
  run(ctx, a.desc(), a);
}

}  // namespace portllm::ops
