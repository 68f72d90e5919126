// Multi-head latent attention (DeepSeek-V2/V3) in the absorbed form over a paged latent cache.
// Per token the cache keeps one vector [kv_a_layernorm(c_kv) (kv_lora_rank) | roped k_pe
// (qk_rope_head_dim)] shared by all heads. The no-rope query goes through W_UK (the key half of
// kv_b_proj) into latent space, attention runs over the latent (MLA_ATTENTION), and W_UV (the
// value half of kv_b_proj) maps the result back per head before o_proj. Rotary embedding uses
// DeepSeek's interleaved pair layout; yarn's mscale is folded into the softmax scale.
#pragma once
#include <string>

#include "model/cache_spec.h"
#include "model/config.h"
#include "model/forward_batch.h"
#include "model/linear.h"

namespace portllm {

struct MlaAttention {
  int64_t num_heads = 0, q_lora_rank = 0, kv_lora_rank = 0, nope_dim = 0, rope_dim = 0, v_dim = 0;
  Linear q_proj;            // no q_lora: [H*(nope+rope), hidden]
  Linear q_a, q_b;          // q_lora: [q_lora, hidden], [H*(nope+rope), q_lora]
  Tensor q_a_norm;          // [q_lora]
  Linear kv_a;              // [kv_lora + rope, hidden]
  Tensor kv_a_norm;         // [kv_lora]
  Tensor w_uk_t;            // [H, kv_lora, nope]: W_UK per head, transposed (absorbs q_nope)
  Tensor kv_b;              // [H*(nope+v), kv_lora] float (fp8 checkpoints: dequantized)
  Linear o;                 // [hidden, H*v]
  Tensor cos_sin;           // [max_pos, rope] f32
  float scale = 1.f, eps = 1e-6f;

  // mscale_in_softmax: multiply the softmax scale by yarn_get_mscale(factor, mscale_all_dim)^2
  // (DeepSeek's reference code and transformers' DeepseekV3Attention).
  static MlaAttention load(WeightLoader& w, OpContext& ctx, const std::string& prefix, const ModelConfig& cfg,
                           bool mscale_in_softmax);
  LayerCacheSpec cache_spec() const;
  // The same spec from config.json alone (memory planning without loading weights).
  static LayerCacheSpec cache_spec_for(const ModelConfig& cfg);
  Tensor forward(OpContext& ctx, const ForwardBatch& b, LayerCache& cache, const Tensor& x) const;
};

}  // namespace portllm
