// Argument structs of the mixture-of-experts and multi-head latent attention (MLA) ops.
// A MoE layer on any backend is this op sequence (see model/layers/moe.cpp):
//   router logits = MATMUL(x, gate)                      [T, E] f32
//   MOE_ROUTE_SOFTMAX | MOE_ROUTE_GROUPED               -> topk_ids [T, k], topk_weights [T, k]
//   MOE_PERMUTE(x, topk_ids)                            -> x_sorted [R, H] grouped by expert
//   MOE_GEMM(x_sorted, W_gate_up[E, 2I, H])             -> [R, 2I]
//   SILU_MUL                                            -> [R, I]
//   MOE_GEMM(.., W_down[E, H, I])                       -> y [R, H]
//   MOE_COMBINE(y, dst_row, topk_weights, shared)       -> out [T, H]
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
// dtype[0] = x/out, dtype[1] = W; dim[0] = E, dim[1] = N, dim[2] = K, dim[3] = block_k.
struct MoeGemmArgs {
  Tensor out;             // [R, N]
  Tensor x;               // [R, K]
  Tensor w;               // [E, N, K] contiguous
  Tensor w_scale;         // fp8: [E, ceil(N/block_n), ceil(K/block_k)] f32 contiguous
  Tensor expert_offsets;  // [E + 1] i32
  int block_n = 0, block_k = 0;
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
