// Gated full attention (Qwen3-Next, Qwen3.5/3.6): GQA over the paged KV cache where q_proj
// produces, per head, the query and an output gate ([q_h | gate_h], head_dim each); per-head
// q/k RMSNorm with (1 + weight); partial rotary embedding (partial_rotary_factor of head_dim);
// attention output multiplied by sigmoid(gate) before o_proj.
#pragma once
#include <string>

#include "model/cache_spec.h"
#include "model/config.h"
#include "model/forward_batch.h"
#include "model/layers/normed_input.h"
#include "model/linear.h"

namespace portllm {

struct GatedAttention {
  Linear qkv, o;          // qkv: [q|gate interleaved per head (2 * H * D), k (Hkv * D), v (Hkv * D)]
  Tensor q_norm, k_norm;  // [head_dim], applied as (1 + w)
  Tensor cos_sin;         // [max_pos, rot_dim] f32 on the device
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int rot_dim = 0;
  float scale = 1.f, eps = 1e-6f;

  // prefix: the layer's self_attn module; cos_sin: the model's shared rope table.
  static GatedAttention load(WeightLoader& w, const std::string& prefix, const ModelConfig& cfg,
                             const Tensor& cos_sin, int rot_dim);
  LayerCacheSpec cache_spec() const;
  // x: the [T, hidden] normalized input, unevaluated (the norm may run inside the qkv GEMV);
  // returns the o_proj output [T, hidden], o_proj left pending where it is one float matrix.
  SublayerOut forward(OpContext& ctx, const ForwardBatch& b, LayerCache& cache, NormedInput& x) const;
};

}  // namespace portllm
