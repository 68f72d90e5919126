// Standard GQA self-attention over the paged KV cache: fused q|k|v projection (optional bias),
// optional per-head q/k RMSNorm (Qwen3), rotary embedding (any scaling, partial rotary),
// KV write and the ATTN_PREFILL / ATTN_DECODE ops, then the output projection.
#pragma once
#include <string>

#include "model/cache_spec.h"
#include "model/config.h"
#include "model/forward_batch.h"
#include "model/layers/normed_input.h"
#include "model/linear.h"
#include "ops/op_args.h"

namespace portllm {

struct AttentionBlock {
  Linear qkv, o;
  Tensor q_norm, k_norm;  // [head_dim] each, or undefined
  Tensor cos_sin;         // [max_pos, rot_dim] f32 on the device
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int rot_dim = 0;
  float scale = 1.f, eps = 1e-6f;

  static AttentionBlock load(WeightLoader& w, const std::string& prefix,
                             const ModelConfig& cfg, bool qkv_bias, bool qk_norm);
  LayerCacheSpec cache_spec() const;
  // x: the [T, hidden] normalized input, unevaluated (the norm may run inside the qkv GEMV);
  // returns the o_proj output [T, hidden], o_proj left pending where it is one float matrix.
  SublayerOut forward(OpContext& ctx, const ForwardBatch& b, LayerCache& cache, NormedInput& x) const;
};

// The model's RoPE cos/sin table on the device, [max_served_positions, rot_dim] f32: computed
// once per model load and shared by every layer with that rotary dim.
Tensor rope_table(WeightLoader& w, int rot_dim);

// Attention over the paged cache with this batch's metadata (shared by MLA and gated attention).
void paged_attention(OpContext& ctx, const ForwardBatch& b, const Tensor& out, const Tensor& q,
                     const Tensor& k_cache, const Tensor& v_cache, float scale);

// The args of the per-token preparation (q/k norm when q_norm is defined, RoPE, K/V into this
// layer's cache) for this batch (shared by the standard and the gated attention).
QkNormRopeKvWriteArgs prepare_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                                   const Tensor& k_norm, float eps, float weight_offset, const ForwardBatch& b,
                                   LayerCache& cache, const Tensor& cos_sin, int rot_dim);

// A [T, H, D] view of columns [col0, col0 + H*D) of a [T, C] tensor.
Tensor heads_view(const Tensor& t2d, int64_t col0, int64_t heads, int64_t dim);

}  // namespace portllm
