// Argument structs, one per op. Tensors live on the device the kernel runs on. Unless noted,
// the last dim of every tensor is contiguous and the row stride (stride(0), or the stride of
// the token dim) may be larger than the row, so kernels accept views/slices of wider tensors.
// Index tensors are i32. "Host mirror" vectors are filled by the caller for backends that plan
// work on the host (all backends may rely on them being present and equal to the tensors).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/op.h"

namespace portllm {

// dtype[0] = out/table dtype.
struct EmbedArgs {
  Tensor out;    // [T, H]
  Tensor table;  // [V, H]
  Tensor ids;    // [T] i32
  OpDesc desc() const;
};

// y = x / rms(x) * (weight_offset + weight). Qwen3-Next/3.5 use weight_offset 1 ("1 + w").
// dtype[0] = x/out, dtype[1] = weight; dim[0] = D.
struct RmsNormArgs {
  Tensor out;     // [R, D]
  Tensor x;       // [R, D]
  Tensor weight;  // [D]
  float eps = 1e-6f;
  float weight_offset = 0.f;
  OpDesc desc() const;
};

// residual = residual + x; out = rmsnorm(residual). dtype[0] = act, dtype[1] = weight.
struct AddRmsNormArgs {
  Tensor residual;  // [R, D] in/out
  Tensor out;       // [R, D]
  Tensor x;         // [R, D]
  Tensor weight;    // [D]
  float eps = 1e-6f;
  float weight_offset = 0.f;
  OpDesc desc() const;
};

// In-place rotary embedding on the first rot_dim dims of each head of q and k.
// cos_sin row p holds cos(p * f_i) for i < rot_dim/2 then sin(p * f_i) (f32, any scaling folded
// in). interleaved: pairs (2i, 2i+1) (DeepSeek/GPT-J); else pairs (i, i + rot_dim/2) (NeoX).
// dtype[0] = q/k; dim[0] = rot_dim; flags bit0 = interleaved.
struct RopeArgs {
  Tensor q;          // [T, Hq, Dq] (strided views allowed in dims 0 and 1)
  Tensor k;          // [T, Hk, Dk] or undefined
  Tensor positions;  // [T] i32
  Tensor cos_sin;    // [max_pos, rot_dim] f32
  int rot_dim = 0;
  bool interleaved = false;
  OpDesc desc() const;
};

// out = silu(gate) * up. dtype[0] = act.
struct SiluMulArgs {
  Tensor out;   // [T, I]
  Tensor gate;  // [T, I]
  Tensor up;    // [T, I]
  OpDesc desc() const;
};

// out = a + b (same shapes, 2-D [R, C]). dtype[0] = act.
struct AddArgs {
  Tensor out, a, b;
  OpDesc desc() const;
};

// out[M,N] = x[M,K] @ W[N,K]^T (+ bias[N]). For MATMUL_FP8_BLOCK, W is f8_e4m3 and
// w_scale holds the dequantization multipliers ("weight_scale_inv"): [ceil(N/block_n),
// ceil(K/block_k)] f32 for block scaling, or [1] for a per-tensor scale (block_n = block_k = 0).
// dtype[0] = x/out, dtype[1] = W; dim[0] = M, dim[1] = N, dim[2] = K, dim[3] = block_k.
// W (and bias, w_scale) are weights: no kernel of a forward step writes them, so a GPU kernel may
// read them before waiting for the previous kernel (backends/gpu/programmatic_launch.cuh).
struct MatmulArgs {
  Tensor out;
  Tensor x;
  Tensor w;
  Tensor bias;     // optional
  Tensor w_scale;  // fp8 only
  int block_n = 0, block_k = 0;
  OpDesc desc() const;
};

// out[M, I] = silu(x @ Wg^T) * (x @ Wu^T), W = [Wg; Wu] ([2I, K], float weights, no bias): a
// gated MLP's gate_up MATMUL with SILU_MUL as its epilogue. Defined as MATMUL into [M, 2I] of the
// activation dtype, then SILU_MUL (rounding where those store); where only the reference takes it,
// ops::matmul_silu_mul runs those two ops. dtype[0] = x/out, dtype[1] = W; dim[0] = M, dim[1] = I,
// dim[2] = K.
struct MatmulSiluMulArgs {
  Tensor out;  // [M, I]
  Tensor x;    // [M, K]
  Tensor w;    // [2I, K]
  OpDesc desc() const;
};

// ADD_RMS_NORM followed by the MATMUL (or MATMUL_SILU_MUL) that consumes its output, as one op:
// at decode a norm is a launch for a few KB of work, and the GEMV after it can normalize the row
// itself (every block, while its first weights are in flight). Defined as
//   residual_out = residual + x   (rounded to the activation dtype)
//   h   = rmsnorm(residual_out) * (weight_offset + norm_weight)   (ADD_RMS_NORM's rounding)
//   out = h @ W^T (+ bias), or gated: silu(h @ Wg^T) * (h @ Wu^T)  (MATMUL / MATMUL_SILU_MUL's)
// residual_out must not overlap residual or x (a GPU kernel's blocks all read the old residual
// while some of them write the new one), h is written only when defined, and W is a weight (read
// before the predecessor kernel finishes, as MatmulArgs says). dtype[0] = act, dtype[1] = W,
// dtype[2] = out, dtype[3] = norm weight; dim[0] = M, dim[1] = N (gated: I), dim[2] = K;
// flags bit0 = gated, bit1 = bias, bit2 = h written.
struct AddRmsNormMatmulArgs {
  Tensor residual;      // [M, K]
  Tensor residual_out;  // [M, K]
  Tensor x;             // [M, K]
  Tensor norm_weight;   // [K]
  float eps = 1e-6f;
  float weight_offset = 0.f;
  Tensor h;     // [M, K] or undefined
  Tensor out;   // [M, N] (gated: [M, I])
  Tensor w;     // [N, K] (gated: [2I, K]), float weights
  Tensor bias;  // [N] or undefined (not with gated)
  bool gated = false;
  OpDesc desc() const;
};

// A sub-layer's last projection followed by the residual add and the next RMSNorm, as one op: at
// decode that norm is a launch for a few KB of work, and its place on the chain (the GEMV before it
// ends, it waits, reduces, the next GEMV waits) costs more than its work. The GEMV's last block
// to finish runs it instead. Defined as
//   y         = x @ W^T (+ bias)                                  (MATMUL's rounding, not stored)
//   residual += y; h = rmsnorm(residual) * (weight_offset + w)    (ADD_RMS_NORM's, in place)
// W is a weight (read before the predecessor kernel finishes, as MatmulArgs says). dtype[0] = act
// (x, residual, h), dtype[1] = W, dtype[3] = norm weight; dim[0] = M, dim[1] = N, dim[2] = K;
// flags bit1 = bias.
struct MatmulAddRmsNormArgs {
  Tensor x;            // [M, K]
  Tensor w;            // [N, K], float weights
  Tensor bias;         // [N] or undefined
  Tensor residual;     // [M, N] in/out
  Tensor norm_weight;  // [N]
  float eps = 1e-6f;
  float weight_offset = 0.f;
  Tensor h;  // [M, N]
  OpDesc desc() const;
};

// out[b] = x[b] @ W[b]^T for b < B: out [B, M, N], x [B, M, K], W [B, N, K], each a 3-D view
// with a contiguous last dim and arbitrary batch and row strides (MLA absorbs W_UK / W_UV per
// head this way: the batch is the head, a column or row offset inside one fused tensor).
// dtype[0] = x, dtype[1] = W, dtype[2] = out; dim[0] = M, dim[1] = N, dim[2] = K, dim[3] = B.
struct BatchedMatmulArgs {
  Tensor out;
  Tensor x;
  Tensor w;
  OpDesc desc() const;
};

// k_cache[slot] = k[t], v_cache[slot] = v[t] for slot = slot_mapping[t] >= 0 (slot =
// block * page_size + offset). dtype[0] = k/v, dtype[2] = cache; dim[0] = page_size.
struct KvWriteArgs {
  Tensor k;             // [T, Hkv, Dk]
  Tensor v;             // [T, Hkv, Dv]
  Tensor k_cache;       // [NB, page, Hkv, Dk]
  Tensor v_cache;       // [NB, page, Hkv, Dv]
  Tensor slot_mapping;  // [T] i32
  OpDesc desc() const;
};

// The attention block's per-token preparation as one op: q and k heads RMS-normalized per head
// (Qwen3's q_norm / k_norm; skipped when q_norm is undefined), RoPE on both, then k and v into the
// paged cache. Defined as RMS_NORM(q), RMS_NORM(k), ROPE, KV_WRITE in that order, each rounding
// where it stores (q and k are updated in place, as those ops do). Where only the reference takes
// it, ops::qk_norm_rope_kv_write runs those four ops instead: the fused kernel is a launch saving.
// dtype[0] = q/k/v, dtype[1] = norm weight (q's dtype when none), dtype[2] = cache;
// dim[0] = head dim (q and k), dim[1] = rot_dim, dim[2] = page size, dim[3] = v head dim;
// flags bit0 = interleaved rope, bit1 = q/k norm.
struct QkNormRopeKvWriteArgs {
  Tensor q;       // [T, Hq, D] in/out
  Tensor k;       // [T, Hkv, D] in/out
  Tensor v;       // [T, Hkv, Dv]
  Tensor q_norm;  // [D] or undefined
  Tensor k_norm;  // [D] (with q_norm)
  float eps = 1e-6f;
  float weight_offset = 0.f;  // RmsNormArgs::weight_offset (1 for Qwen3-Next's "1 + w")
  Tensor positions;  // [T] i32
  Tensor cos_sin;    // [max_pos, rot_dim] f32 (RopeArgs)
  int rot_dim = 0;
  bool interleaved = false;
  Tensor k_cache;       // [NB, page, Hkv, D]
  Tensor v_cache;       // [NB, page, Hkv, Dv]
  Tensor slot_mapping;  // [T] i32, < 0: not written
  OpDesc desc() const;
};

// Causal attention over a paged cache for a ragged batch. Sequence b owns queries
// [query_start_loc[b], query_start_loc[b+1]) which sit at the last q_len positions of its
// seq_lens[b] context (the cache already holds this step's K/V). GQA: query head h reads KV head
// h / (Hq / Hkv). out = softmax(scale * q k^T) v. dtype[0] = q/out, dtype[2] = cache;
// dim[0] = head dim (K), dim[1] = page size, dim[2] = Hq / Hkv, dim[3] = head dim (V).
// block_tables, seq_lens and query_start_loc are step metadata, uploaded before the step and
// written by no kernel of it (a GPU kernel may read them before waiting for its predecessor). The
// step writes only the cache rows of its own tokens (the last q_len positions of each sequence):
// rows of earlier positions are settled before the op's predecessor runs.
struct AttentionArgs {
  Tensor out;              // [T, Hq, Dv]
  Tensor q;                // [T, Hq, Dk]
  Tensor k_cache;          // [NB, page, Hkv, Dk]
  Tensor v_cache;          // [NB, page, Hkv, Dv]
  Tensor block_tables;     // [B, max_blocks] i32
  Tensor seq_lens;         // [B] i32
  Tensor query_start_loc;  // [B + 1] i32
  // Optional, [B] i32, step metadata as above: a permutation of the sequences, longest context
  // first, in which a kernel may schedule their work (ATTN_DECODE on the GPU: its blocks start in
  // this order, so the longest contexts do not start last and run on alone). Results do not
  // depend on it; backends that do not read it see the batch order.
  Tensor work_order;
  float scale = 1.f;
  int max_q_len = 0, max_seq_len = 0;
  std::vector<int32_t> host_seq_lens, host_query_start_loc;  // host mirrors
  OpDesc desc(Op op) const;
};

// out[r] = argmax_j x[r, j] (first index on ties). dtype[0] = x.
struct ArgmaxArgs {
  Tensor out;  // [R] i32
  Tensor x;    // [R, N]
  OpDesc desc() const;
};

// Row softmax. dtype[0] = x/out.
struct SoftmaxArgs {
  Tensor out;  // [R, N]
  Tensor x;    // [R, N]
  OpDesc desc() const;
};

// A decode step's packed i32 inputs (runtime/decode_graphs.h) from the copy staged for them in
// device memory, with token ids fed from the sampled ids of the step before (async scheduling):
// out = staged, then for i < n with 0 <= rows[i] < R, out[ids_offset + i] = sampled[rows[i]].
// One launch instead of a staged copy plus a copy per run of fed rows. All contiguous.
struct TokenFeedArgs {
  Tensor out;              // [N] i32
  Tensor staged;           // [N] i32
  Tensor rows;             // [n] i32: token i's row in `sampled`, or -1 to keep the staged id
  Tensor sampled;          // [R] i32; undefined when nothing is fed
  int64_t ids_offset = 0;  // token i's id is out[ids_offset + i]; ids_offset + n <= N
  OpDesc desc() const;
};

}  // namespace portllm
