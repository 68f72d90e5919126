// Argument structs of the mixture-of-experts and multi-head latent attention (MLA) ops.
// A MoE layer on any backend is this op sequence (see model/layers/moe.cpp):
//   router logits = MATMUL(x, gate)                      [T, E] f32
//   MOE_ROUTE_SOFTMAX | MOE_ROUTE_GROUPED               -> topk_ids [T, k], topk_weights [T, k]
//   MOE_PERMUTE(x, topk_ids)                            -> x_sorted [R, H] grouped by expert
//   MOE_GEMM(x_sorted, W_gate_up[E, 2I, H])             -> [R, 2I]
//   SILU_MUL                                            -> [R, I]
//   MOE_GEMM(.., W_down[E, H, I])                       -> y [R, H]
//   MOE_COMBINE(y, dst_row, topk_weights, shared)       -> out [T, H]
// Small batches may run the experts in two launches instead (ops::moe_experts picks, ops_moe.h):
//   MOE_GEMM(x, W_gate_up, topk_ids) [gather mode]      -> [T*k, 2I], row t*k+j, no permutation
//   MOE_DOWN_COMBINE(gate_up, W_down, ids, weights, shared) -> out [T, H]
// or with the SwiGLU moved into the first GEMM's epilogue (MoeGemmArgs::swiglu):
//   MOE_GEMM(x, W_gate_up, topk_ids) [gather + swiglu]  -> h [T*k, I]
//   MOE_DOWN_COMBINE(h, W_down, ids, weights, shared) [activated] -> out [T, H]
// All index tensors are i32; router scores and weights are f32.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/op.h"

namespace portllm {

// How MOE_ROUTE_GROUPED scores experts and groups.
enum class MoeScoring : uint8_t { Softmax = 0, Sigmoid = 1 };
// Group score: the best expert of the group (DeepSeek-V2 group_limited_greedy) or the sum of the
// group's two best biased scores (DeepSeek-V3 noaux_tc).
enum class MoeGroupScore : uint8_t { Max = 0, Top2Sum = 1 };

// Router. scores = softmax(logits) (or sigmoid for GROUPED/Sigmoid); selection uses
// scores + bias (bias optional, GROUPED only). GROUPED first keeps the topk_group best of
// n_group equal expert groups, then picks top_k experts inside them. Weights are the
// *unbiased* scores of the chosen experts, divided by their sum when renormalize, then times
// scale (routed_scaling_factor). Ids are written best-first (ties: lower expert id first).
// dtype[0] = logits, dtype[1] = bias; dim[0] = E, dim[1] = top_k, dim[2] = n_group, dim[3] = topk_group;
// flags: bit0 renormalize, bit1 sigmoid, bit2 Top2Sum, bit3 has bias.
// A NaN selection score (NaN or infinite logits, a NaN bias) ranks below every number, ties
// among such experts going to the lower id, so the ids are always k distinct experts; their
// weights are whatever the math gives (NaN).
struct MoeRouteArgs {
  Tensor topk_ids;      // [T, k] i32 (out)
  Tensor topk_weights;  // [T, k] f32 (out)
  Tensor logits;        // [T, E] f32
  Tensor bias;          // [E] f32, optional (e_score_correction_bias)
  int top_k = 1;
  bool renormalize = false;
  float scale = 1.f;
  // MOE_ROUTE_GROUPED only:
  MoeScoring scoring = MoeScoring::Softmax;
  MoeGroupScore group_score = MoeGroupScore::Max;
  int n_group = 1, topk_group = 1;
  OpDesc desc(Op op) const;
};

// Permutation of the T*k (token, slot) assignments into rows grouped by expert. Expert e owns
// rows [expert_offsets[e], expert_offsets[e+1]); each segment starts at a multiple of `align`
// (GPU GEMM tiles; 1 = dense). Inside a segment, assignments appear in increasing t*k + j order,
// then padding rows. Padding and rows past expert_offsets[E] have sorted_token = -1 and zero x.
// R (rows of x_sorted) must be >= T*k + E*(align-1). dtype[0] = x; dim[0] = E, dim[1] = align.
struct MoePermuteArgs {
  Tensor x_sorted;        // [R, H] (out)
  Tensor sorted_token;    // [R] i32 (out): source token of each row, -1 for padding
  Tensor dst_row;         // [T, k] i32 (out): the row assignment (t, j) went to
  Tensor expert_offsets;  // [E + 1] i32 (out)
  Tensor x;               // [T, H]
  Tensor topk_ids;        // [T, k] i32
  int num_experts = 0;
  int align = 1;
  OpDesc desc() const;
};

// Grouped GEMM: out[r] = x[r] @ W[e]^T for rows r of expert e (rows >= expert_offsets[E] are
// not written). W is f32/f16/bf16, or f8_e4m3 with w_scale[e, n / block_n, k / block_k] as the
// dequantization multiplier (a per-tensor scale is block_n = N, block_k = K).
// Gather mode (topk_ids defined): the rows are the T*k (token, slot) assignments a = t*k + j in
// that order, and out[a] = x[t] @ W[topk_ids[t, j]]^T with x [T, K], out [T*k, N];
// expert_offsets is not read (kernels group the assignments by expert themselves). This is the
// permutation-free first GEMM of small batches (ops::moe_experts); a kernel that does not
// implement it must decline flag bit0.
// SwiGLU epilogue (swiglu, gather mode only): W is a stacked [gate | up] projection, N = 2I, and
// out [T*k, I] holds h[a, c] = act(silu(act(g)) * act(u)) with g = out column c and u = column
// I + c of the plain gather GEMM, act() rounding to the out dtype: exactly SILU_MUL's output over
// the plain GEMM's stored rows. A kernel that does not implement it must decline flag bit1.
// dtype[0] = x, dtype[1] = W, dtype[2] = out; dim[0] = E, dim[1] = N, dim[2] = K, dim[3] = block_k;
// flags bit0 = gather mode, bit1 = swiglu.
struct MoeGemmArgs {
  Tensor out;             // [R, N] ([T*k, N] in gather mode)
  Tensor x;               // [R, K] ([T, K] in gather mode)
  Tensor w;               // [E, N, K] contiguous
  Tensor w_scale;         // fp8: [E, ceil(N/block_n), ceil(K/block_k)] f32 contiguous
  Tensor expert_offsets;  // [E + 1] i32 (unused in gather mode)
  int block_n = 0, block_k = 0;
  Tensor topk_ids;        // [T, k] i32: gather mode when defined
  bool swiglu = false;    // gather mode only: out [T*k, N/2] = SwiGLU of each [gate | up] row
  OpDesc desc() const;
};

// The second half of a token's experts, fused: the down projection of each assignment's SwiGLU
// activation, weighted and summed over the token's experts (what SILU_MUL, MOE_GEMM and
// MOE_COMBINE compute one launch each):
//   h_a = act(silu(gate_up[a, :I]) * gate_up[a, I:]) for a = t*k + j, rounded to the activation
//   dtype exactly as SILU_MUL's output is;
//   out[t] = shared[t] (if defined) + sum_j topk_weights[t, j] * (W[topk_ids[t, j]] @ h_a),
// the sum kept in f32 (no rounding of the per-expert products). out may be the same tensor as
// shared. W as MOE_GEMM's (float, or fp8 with block scales).
// activated: gate_up is h itself, [T*k, I] (the output of MOE_GEMM's SwiGLU epilogue), used as is.
// dtype[0] = gate_up/out, dtype[1] = W; dim[0] = T, dim[1] = H (N), dim[2] = I (K),
// dim[3] = block_k; flags bit0 = has shared, bit1 = activated, bits 8..15 = top_k (255 when larger).
struct MoeDownCombineArgs {
  Tensor out;           // [T, H]
  Tensor gate_up;       // [T*k, 2I]: row t*k+j is [gate | up] of assignment (t, j) ([T*k, I] h if activated)
  Tensor w;             // [E, H, I] contiguous
  Tensor w_scale;       // fp8: [E, ceil(H/block_n), ceil(I/block_k)] f32 contiguous
  int block_n = 0, block_k = 0;
  Tensor topk_ids;      // [T, k] i32
  Tensor topk_weights;  // [T, k] f32
  Tensor shared;        // [T, H] optional
  bool activated = false;
  OpDesc desc() const;
};

// out[t] = shared[t] (if defined) + sum_j weights[t, j] * y[dst_row[t, j]]. out may be the same
// tensor as shared. dtype[0] = y/out; flags bit0 = has shared.
struct MoeCombineArgs {
  Tensor out;      // [T, H]
  Tensor y;        // [R, H]
  Tensor dst_row;  // [T, k] i32
  Tensor weights;  // [T, k] f32
  Tensor shared;   // [T, H] optional
  OpDesc desc() const;
};

// Absorbed MLA over a paged latent cache. Each cache entry is [c (Dc) | k_pe (Dr)]; one latent
// "KV head" is shared by all H query heads. For query token i of sequence b (position
// seq_lens[b] - q_len + i, causal as ATTN_PREFILL):
//   s_p = scale * (q_latent[i,h] . c_p + q_pe[i,h] . kpe_p),  out[i,h] = sum_p softmax(s)_p c_p
// q_latent = q_nope @ W_UK (absorbed), out is projected by W_UV afterwards (model code).
// dtype[0] = q/out, dtype[2] = cache; dim[0] = Dc, dim[1] = page size, dim[2] = H, dim[3] = Dr;
// flags bit0 = decode (max_q_len == 1).
struct MlaAttentionArgs {
  Tensor out;              // [T, H, Dc]
  Tensor q_latent;         // [T, H, Dc] (strided views allowed in dims 0, 1)
  Tensor q_pe;             // [T, H, Dr] (strided views allowed in dims 0, 1)
  Tensor latent_cache;     // [NB, page, 1, Dc + Dr]
  Tensor block_tables;     // [B, max_blocks] i32
  Tensor seq_lens;         // [B] i32
  Tensor query_start_loc;  // [B + 1] i32
  float scale = 1.f;
  int max_q_len = 0, max_seq_len = 0;
  std::vector<int32_t> host_seq_lens, host_query_start_loc;  // host mirrors
  OpDesc desc() const;
};

}  // namespace portllm
