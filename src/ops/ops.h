// The op API that model code is written against. Each call builds the op's args, lets the
// dispatcher pick a kernel for this device, and runs it on the context's stream. Nothing here
// knows about CUDA, MUSA or the CPU.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/op_args.h"
#include "ops/op_profiler.h"
#include "ops/op_skip.h"
#include "ops/registry.h"

namespace portllm::ops {

template <class Args>
void run(OpContext& ctx, const OpDesc& desc, const Args& args) {
  const KernelInfo& k = ctx.dispatcher->select(desc);
  if (op_skipping_enabled() && op_skipped(desc.op)) [[unlikely]]
    return;  // PORTLLM_SKIP_OPS: a timing run without this op
  if (op_profiling_enabled()) [[unlikely]]
    return profile_op(ctx, k, desc, [&] { k.run(&args, *ctx.stream); });
  k.run(&args, *ctx.stream);
}

// Whether the device has a non-reference kernel for desc. The fused ops' entry points take the
// fused kernel only then: the reference serves any descriptor, at scalar speed, so running it
// would gain nothing over the ops the fused op replaces.
inline bool has_fast_kernel(OpContext& ctx, const OpDesc& desc) {
  const KernelInfo* k = ctx.dispatcher->try_select(desc);
  return k && !k->is_reference();
}

void embed(OpContext& ctx, const Tensor& out, const Tensor& table, const Tensor& ids);
void rms_norm(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& weight, float eps,
              float weight_offset = 0.f);
void add_rms_norm(OpContext& ctx, const Tensor& residual, const Tensor& out, const Tensor& x,
                  const Tensor& weight, float eps, float weight_offset = 0.f);
void rope(OpContext& ctx, const Tensor& q, const Tensor& k, const Tensor& positions,
          const Tensor& cos_sin, int rot_dim, bool interleaved);
void silu_mul(OpContext& ctx, const Tensor& out, const Tensor& gate, const Tensor& up);
void add(OpContext& ctx, const Tensor& out, const Tensor& a, const Tensor& b);
void matmul(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& w,
            const Tensor& bias = {}, const Tensor& w_scale = {}, int block_n = 0, int block_k = 0);
// out = silu(x @ Wg^T) * (x @ Wu^T), W = [Wg; Wu]: fused where the device has a kernel, else
// MATMUL + SILU_MUL.
void matmul_silu_mul(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& w);
// AddRmsNormMatmulArgs: runs the fused kernel (the norm inside the GEMV) where the device has one
// and returns true; returns false, running nothing, where only the reference would take it. The
// caller then runs ADD_RMS_NORM in place and the projection (model/layers/normed_input.h), which
// beats the op's literal composition (ADD into a second buffer, RMS_NORM, the projection).
bool add_rms_norm_matmul(OpContext& ctx, const AddRmsNormMatmulArgs& a);
// MatmulAddRmsNormArgs: the fused kernel where the device has one (returns true), else nothing runs
// and it returns false (the caller then runs the projection and ADD_RMS_NORM).
bool matmul_add_rms_norm(OpContext& ctx, const MatmulAddRmsNormArgs& a);
// out[b] = x[b] @ W[b]^T over 3-D strided views (BatchedMatmulArgs).
void batched_matmul(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& w);
void kv_write(OpContext& ctx, const KvWriteArgs& args);
// q/k norm + RoPE + KV write: the fused kernel where the device has one, else the four ops.
void qk_norm_rope_kv_write(OpContext& ctx, const QkNormRopeKvWriteArgs& args);
void attention(OpContext& ctx, const AttentionArgs& args);  // ATTN_DECODE when max_q_len == 1
// Indices 0 .. n - 1 ordered by lens[i], longest first (ties in index order): the work order
// AttentionArgs::work_order takes for a batch with these context lengths.
std::vector<int32_t> longest_first(const int32_t* lens, int n);
void argmax(OpContext& ctx, const Tensor& out, const Tensor& x);
void softmax(OpContext& ctx, const Tensor& out, const Tensor& x);
void token_feed(OpContext& ctx, const TokenFeedArgs& args);

}  // namespace portllm::ops
