#include "model/layers/gated_attention.h"

#include <cmath>

#include "model/layers/attention.h"
#include "ops/ops.h"
#include "ops/ops_hybrid.h"

namespace portllm {

namespace {
// Per-head [T, H, D] view of the query (part 0) or gate (part 1) inside q_proj's output, whose
// head h occupies columns [2hD, 2(h+1)D) as [query | gate].
Tensor q_or_gate(const Tensor& proj, int part, int64_t H, int64_t D) {
  Tensor v = heads_view(proj, part * D, H, D);
  v.strides[1] = 2 * D;
  return v;
}
}  // namespace

GatedAttention GatedAttention::load(WeightLoader& w, const std::string& p, const ModelConfig& cfg,
                                    const Tensor& cos_sin, int rot_dim) {
  GatedAttention a;
  a.num_heads = cfg.num_heads;
  a.num_kv_heads = cfg.num_kv_heads;
  a.head_dim = cfg.head_dim;
  a.eps = float(cfg.rms_norm_eps);
  a.scale = float(1.0 / std::sqrt(double(a.head_dim)));
  const int64_t Hd = cfg.hidden_size, qd = a.num_heads * a.head_dim, kvd = a.num_kv_heads * a.head_dim;
  a.qkv = Linear::load_merged(w, {p + ".q_proj", p + ".k_proj", p + ".v_proj"}, Hd, {2 * qd, kvd, kvd},
                              cfg.attention_bias);
  a.o = Linear::load(w, p + ".o_proj", qd, Hd, cfg.attention_bias);
  a.q_norm = w.load(p + ".q_norm.weight", {a.head_dim});
  a.k_norm = w.load(p + ".k_norm.weight", {a.head_dim});
  a.cos_sin = cos_sin;
  a.rot_dim = rot_dim;
  return a;
}

LayerCacheSpec GatedAttention::cache_spec() const {
  LayerCacheSpec s;
  s.kind = LayerCacheSpec::Kind::PagedKV;
  s.num_kv_heads = num_kv_heads;
  s.head_dim_k = s.head_dim_v = head_dim;
  return s;
}

SublayerOut GatedAttention::forward(OpContext& ctx, const ForwardBatch& b, LayerCache& cache, NormedInput& x) const {
  const int64_t T = x.rows(), H = num_heads, D = head_dim;
  Tensor proj = x.project(ctx, qkv);
  Tensor q = q_or_gate(proj, 0, H, D), gate = q_or_gate(proj, 1, H, D);
  Tensor k = heads_view(proj, 2 * H * D, num_kv_heads, D);
  Tensor v = heads_view(proj, 2 * H * D + num_kv_heads * D, num_kv_heads, D);
  ops::qk_norm_rope_kv_write(ctx, prepare_args(q, k, v, q_norm, k_norm, eps, 1.f, b, cache, cos_sin, rot_dim));
  Tensor attn = ctx.act({T, H, D});
  paged_attention(ctx, b, attn, q, cache.k, cache.v, scale);
  ops::sigmoid_mul(ctx, attn, attn, gate);
  return SublayerOut::last_projection(ctx, o, attn.reshape({T, H * D}));
}

}  // namespace portllm
