#include "model/layers/attention.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/rope.h"
#include "ops/ops.h"

namespace portllm {

Tensor heads_view(const Tensor& t2d, int64_t col0, int64_t heads, int64_t dim) {
  Tensor v = t2d.slice(1, col0, heads * dim);
  Tensor r = v;
  r.ndim = 3;
  r.shape = {v.shape[0], heads, dim, 0, 0};
  r.strides = {v.strides[0], dim, 1, 0, 0};
  return r;
}

Tensor rope_table(WeightLoader& w, int rot_dim) {
  const ModelConfig& cfg = w.config();
  return w.derived(fmt::format("rope_cos_sin/{}", rot_dim), [&] {
    return w.device().upload(rope_cos_sin_table(cfg.rope, rot_dim, cfg.max_served_positions()));
  });
}

QkNormRopeKvWriteArgs prepare_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                                   const Tensor& k_norm, float eps, float weight_offset, const ForwardBatch& b,
                                   LayerCache& cache, const Tensor& cos_sin, int rot_dim) {
  QkNormRopeKvWriteArgs a;
  a.q = q;
  a.k = k;
  a.v = v;
  a.q_norm = q_norm;
  a.k_norm = k_norm;
  a.eps = eps;
  a.weight_offset = weight_offset;
  a.positions = b.positions;
  a.cos_sin = cos_sin;
  a.rot_dim = rot_dim;
  a.k_cache = cache.k;
  a.v_cache = cache.v;
  a.slot_mapping = b.slot_mapping;
  return a;
}

void paged_attention(OpContext& ctx, const ForwardBatch& b, const Tensor& out, const Tensor& q,
                     const Tensor& k_cache, const Tensor& v_cache, float scale) {
  AttentionArgs a;
  a.out = out;
  a.q = q;
  a.k_cache = k_cache;
  a.v_cache = v_cache;
  a.block_tables = b.block_tables;
  a.seq_lens = b.seq_lens;
  a.query_start_loc = b.query_start_loc;
  a.scale = scale;
  a.max_q_len = b.max_q_len;
  a.max_seq_len = b.max_seq_len;
  const int D = b.num_decode_seqs, B = b.num_seqs;
  if (D == B) a.work_order = b.decode_order;
  if (D == 0 || D == B) {
    a.host_seq_lens = b.host_seq_lens;
    a.host_query_start_loc = b.host_query_start_loc;
    return ops::attention(ctx, a);
  }
  // A step that mixes decode tokens with prefill chunks: the decode sequences (laid out first)
  // go to ATTN_DECODE, which reads each K/V row once for all query heads that share it, and the
  // rest to ATTN_PREFILL. One ATTN_PREFILL over both would give each decode token a query tile
  // of its own per head: on the H200 the nano-vllm workload's mixed steps spent 1.05 ms per layer
  // there, 2.9 of its 19 s of kernel time (`PORTLLM_PROFILE_OPS=1 portllm bench throughput`,
  // BENCHMARKS.md, seventh session).
  auto part = [&](int s0, int n, int max_q_len, const Tensor& qsl, const int32_t* host_qsl, const Tensor& order = {}) {
    const int t0 = b.host_query_start_loc[size_t(s0)], t1 = b.host_query_start_loc[size_t(s0 + n)];
    AttentionArgs p = a;
    p.out = out.slice(0, t0, t1 - t0);
    p.q = q.slice(0, t0, t1 - t0);
    p.block_tables = b.block_tables.slice(0, s0, n);
    p.seq_lens = b.seq_lens.slice(0, s0, n);
    p.query_start_loc = qsl;
    p.work_order = order;
    p.max_q_len = max_q_len;
    p.host_seq_lens.assign(b.host_seq_lens.begin() + s0, b.host_seq_lens.begin() + s0 + n);
    p.host_query_start_loc.assign(host_qsl, host_qsl + n + 1);
    p.max_seq_len = *std::max_element(p.host_seq_lens.begin(), p.host_seq_lens.end());
    ops::attention(ctx, p);
  };
  // The prefill part's longest query is the batch's: every decode sequence feeds one token.
  part(0, D, 1, b.query_start_loc.slice(0, 0, D + 1), b.host_query_start_loc.data(), b.decode_order);
  part(D, B - D, b.max_q_len, b.prefill_query_start_loc, b.host_prefill_query_start_loc.data());
}

AttentionBlock AttentionBlock::load(WeightLoader& w, const std::string& p,
                                    const ModelConfig& cfg, bool qkv_bias, bool qk_norm) {
  AttentionBlock a;
  a.num_heads = cfg.num_heads;
  a.num_kv_heads = cfg.num_kv_heads;
  a.head_dim = cfg.head_dim;
  a.eps = float(cfg.rms_norm_eps);
  a.scale = float(1.0 / std::sqrt(double(a.head_dim)));
  const int64_t H = cfg.hidden_size, qd = a.num_heads * a.head_dim, kvd = a.num_kv_heads * a.head_dim;
  a.qkv = Linear::load_merged(w, {p + ".q_proj", p + ".k_proj", p + ".v_proj"}, H, {qd, kvd, kvd}, qkv_bias);
  a.o = Linear::load(w, p + ".o_proj", qd, H, false);
  if (qk_norm) {
    a.q_norm = w.load(p + ".q_norm.weight", {a.head_dim});
    a.k_norm = w.load(p + ".k_norm.weight", {a.head_dim});
  }
  a.rot_dim = cfg.rotary_dim();
  a.cos_sin = rope_table(w, a.rot_dim);
  return a;
}

LayerCacheSpec AttentionBlock::cache_spec() const {
  LayerCacheSpec s;
  s.kind = LayerCacheSpec::Kind::PagedKV;
  s.num_kv_heads = num_kv_heads;
  s.head_dim_k = s.head_dim_v = head_dim;
  return s;
}

SublayerOut AttentionBlock::forward(OpContext& ctx, const ForwardBatch& b, LayerCache& cache, NormedInput& x) const {
  const int64_t T = x.rows();
  Tensor qkv_out = x.project(ctx, qkv);
  Tensor q = heads_view(qkv_out, 0, num_heads, head_dim);
  Tensor k = heads_view(qkv_out, num_heads * head_dim, num_kv_heads, head_dim);
  Tensor v = heads_view(qkv_out, (num_heads + num_kv_heads) * head_dim, num_kv_heads, head_dim);
  ops::qk_norm_rope_kv_write(ctx, prepare_args(q, k, v, q_norm, k_norm, eps, 0.f, b, cache, cos_sin, rot_dim));
  Tensor attn = ctx.act({T, num_heads, head_dim});
  paged_attention(ctx, b, attn, q, cache.k, cache.v, scale);
  return SublayerOut::last_projection(ctx, o, attn.reshape({T, num_heads * head_dim}));
}

}  // namespace portllm
