#include "model/layers/mla_attention.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "model/layers/attention.h"
#include "model/rope.h"
#include "ops/ops.h"
#include "ops/ops_moe.h"

namespace portllm {

namespace {
// A head-major view [H, rows, cols] of t starting `elem_off` elements in: head h's block starts
// h * head_stride elements further, its rows are ld apart (the batched absorption operands).
Tensor per_head(const Tensor& t, int64_t elem_off, int64_t H, int64_t rows, int64_t cols, int64_t head_stride,
                int64_t ld) {
  Tensor v = t;
  v.data = static_cast<char*>(t.data) + elem_off * int64_t(dtype_size(t.dtype));
  v.ndim = 3;
  v.shape = {H, rows, cols, 0, 0};
  v.strides = {head_stride, ld, 1, 0, 0};
  return v;
}

// out[h] = x[h] @ W[h]^T for every head in one BATCHED_MATMUL (one launch instead of H). Where no
// kernel takes the dtypes (on a GPU: f32-stored weights under bf16 activations) it is one MATMUL
// per head, whose kernels widen mixed operands.
void per_head_matmul(OpContext& ctx, const Tensor& out, const Tensor& x, const Tensor& w) {
  if (ctx.dispatcher->try_select(BatchedMatmulArgs{out, x, w}.desc())) return ops::batched_matmul(ctx, out, x, w);
  for (int64_t h = 0; h < w.size(0); ++h) ops::matmul(ctx, out.select(0, h), x.select(0, h), w.select(0, h));
}

// [T, H, d] view of columns off + h*stride .. of a [T, C] tensor.
Tensor heads3d(const Tensor& t, int64_t off, int64_t H, int64_t d, int64_t head_stride) {
  Tensor v = t;
  v.data = static_cast<char*>(t.data) + off * int64_t(dtype_size(t.dtype));
  v.ndim = 3;
  v.shape = {t.shape[0], H, d, 0, 0};
  v.strides = {t.strides[0], head_stride, 1, 0, 0};
  return v;
}

// kv_b_proj as a float host tensor [N, K]: stored float weights as they are, fp8 ones
// dequantized with their block or per-tensor scale (the absorbed form multiplies by slices of
// it, and its transpose, so it is kept dense). Dequantized weights are rounded to `act` when the
// activations are 16-bit, as vLLM does for the absorbed W_UK / W_UV: f32 weights under bf16
// activations have no BATCHED_MATMUL kernel on a GPU and would run as H mixed-dtype matmuls.
Tensor dense_host_weight(WeightLoader& w, const std::string& p, int64_t N, int64_t K, DType act) {
  if (!w.is_fp8_linear(p)) return w.load_host(p + ".weight", {N, K});
  const auto& q = w.config().quant;
  Tensor w8 = w.load_host(p + ".weight", {N, K}, DType::F8E4M3);
  auto buf = std::shared_ptr<float[]>(new float[size_t(N * K)]);
  const uint8_t* src = w8.ptr<uint8_t>();
  if (w.has(p + ".weight_scale_inv") && (q.block_n > 0 || !w.is_dummy())) {
    const int bn = q.block_n > 0 ? q.block_n : 128, bk = q.block_k > 0 ? q.block_k : 128;
    const int64_t sk = (K + bk - 1) / bk;
    Tensor s = w.load_host(p + ".weight_scale_inv", {(N + bn - 1) / bn, sk}, DType::F32);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k)
        buf[size_t(n * K + k)] = f8e4m3_to_f32(src[n * K + k]) * s.ptr<float>()[(n / bn) * sk + k / bk];
  } else {
    Tensor s = w.load_host(p + ".weight_scale", w.stored_shape(p + ".weight_scale", {}), DType::F32);
    for (int64_t i = 0; i < N * K; ++i) buf[size_t(i)] = f8e4m3_to_f32(src[i]) * s.ptr<float>()[0];
  }
  if (act == DType::BF16 || act == DType::F16) {
    auto half = std::shared_ptr<char[]>(new char[size_t(N * K) * dtype_size(act)]);
    convert_from_f32(act, buf.get(), half.get(), size_t(N * K));
    return Tensor::view_of(half.get(), act, {N, K}, DeviceKind::CPU, 0, std::shared_ptr<void>(half, half.get()));
  }
  return Tensor::view_of(buf.get(), DType::F32, {N, K}, DeviceKind::CPU, 0, std::shared_ptr<void>(buf, buf.get()));
}
}  // namespace

MlaAttention MlaAttention::load(WeightLoader& w, OpContext& ctx, const std::string& p, const ModelConfig& cfg,
                                bool mscale_in_softmax) {
  MlaAttention a;
  a.num_heads = cfg.num_heads;
  a.q_lora_rank = cfg.get_int("q_lora_rank", 0);
  a.kv_lora_rank = cfg.get_int("kv_lora_rank");
  a.nope_dim = cfg.get_int("qk_nope_head_dim");
  a.rope_dim = cfg.get_int("qk_rope_head_dim");
  a.v_dim = cfg.get_int("v_head_dim");
  a.eps = float(cfg.rms_norm_eps);
  const int64_t Hd = cfg.hidden_size, H = a.num_heads, qk = a.nope_dim + a.rope_dim, R = a.kv_lora_rank;
  const bool bias = cfg.attention_bias;
  if (a.q_lora_rank > 0) {
    a.q_a = Linear::load(w, p + ".q_a_proj", Hd, a.q_lora_rank, bias);
    a.q_a_norm = w.load(p + ".q_a_layernorm.weight", {a.q_lora_rank});
    a.q_b = Linear::load(w, p + ".q_b_proj", a.q_lora_rank, H * qk, false);
  } else {
    a.q_proj = Linear::load(w, p + ".q_proj", Hd, H * qk, false);
  }
  a.kv_a = Linear::load(w, p + ".kv_a_proj_with_mqa", Hd, R + a.rope_dim, bias);
  a.kv_a_norm = w.load(p + ".kv_a_layernorm.weight", {R});
  a.o = Linear::load(w, p + ".o_proj", H * a.v_dim, Hd, bias);

  // W_UK^T per head, so that q_latent[h] = q_nope[h] @ W_UK[h] is a plain x @ W^T matmul.
  const int64_t rows = a.nope_dim + a.v_dim;
  Tensor kvb = dense_host_weight(w, p + ".kv_b_proj", H * rows, R, ctx.act_dtype);
  const size_t es = dtype_size(kvb.dtype);
  std::vector<char> t(static_cast<size_t>(H * R * a.nope_dim) * es);
  const char* src = static_cast<const char*>(kvb.data);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < a.nope_dim; ++i)
      for (int64_t r = 0; r < R; ++r)
        std::memcpy(t.data() + ((h * R + r) * a.nope_dim + i) * int64_t(es), src + ((h * rows + i) * R + r) * int64_t(es), es);
  a.w_uk_t = ctx.device->empty(kvb.dtype, {H, R, a.nope_dim});
  ctx.device->copy_to_device(a.w_uk_t.data, t.data(), t.size());
  a.kv_b = ctx.device->upload(kvb);
  ctx.device->synchronize();

  a.cos_sin = rope_table(w, int(a.rope_dim));
  double scale = 1.0 / std::sqrt(double(qk));
  if (mscale_in_softmax && cfg.rope.type == "yarn" && cfg.rope.mscale_all_dim && *cfg.rope.mscale_all_dim != 0) {
    const double m = yarn_get_mscale(cfg.rope.factor, *cfg.rope.mscale_all_dim);
    scale *= m * m;
  }
  a.scale = float(scale);
  return a;
}

LayerCacheSpec MlaAttention::cache_spec() const {
  LayerCacheSpec s;
  s.kind = LayerCacheSpec::Kind::PagedLatent;
  s.latent_dim = kv_lora_rank + rope_dim;
  return s;
}

LayerCacheSpec MlaAttention::cache_spec_for(const ModelConfig& cfg) {
  MlaAttention a;
  a.kv_lora_rank = cfg.get_int("kv_lora_rank");
  a.rope_dim = cfg.get_int("qk_rope_head_dim");
  return a.cache_spec();
}

Tensor MlaAttention::forward(OpContext& ctx, const ForwardBatch& b, LayerCache& cache, const Tensor& x) const {
  const int64_t T = x.size(0), H = num_heads, R = kv_lora_rank, qk = nope_dim + rope_dim;
  Tensor q;
  if (q_lora_rank > 0) {
    Tensor qa = q_a.forward(ctx, x);
    ops::rms_norm(ctx, qa, qa, q_a_norm, eps);
    q = q_b.forward(ctx, qa);
  } else {
    q = q_proj.forward(ctx, x);
  }
  Tensor kva = kv_a.forward(ctx, x);  // [T, R + rope]
  Tensor c = kva.slice(1, 0, R);
  ops::rms_norm(ctx, c, c, kv_a_norm, eps);
  Tensor k_pe = heads3d(kva, R, 1, rope_dim, rope_dim);
  Tensor q_pe = heads3d(q, nope_dim, H, rope_dim, qk);
  ops::rope(ctx, q_pe, k_pe, b.positions, cos_sin, int(rope_dim), /*interleaved=*/true);

  // The latent cache entry is [c | k_pe]: KV_WRITE with the two halves as its "K" and "V".
  Tensor lat_c = cache.k.slice(3, 0, R), lat_pe = cache.k.slice(3, R, rope_dim);
  ops::kv_write(ctx, KvWriteArgs{heads3d(kva, 0, 1, R, R), k_pe, lat_c, lat_pe, b.slot_mapping});

  // Absorb W_UK into the query: q_latent[t, h] = q_nope[t, h] @ W_UK[h].
  Tensor q_lat = ctx.act({T, H, R});
  per_head_matmul(ctx, per_head(q_lat, 0, H, T, R, R, H * R), per_head(q, 0, H, T, nope_dim, qk, q.strides[0]), w_uk_t);

  MlaAttentionArgs m;
  m.out = ctx.act({T, H, R});
  m.q_latent = q_lat;
  m.q_pe = q_pe;
  m.latent_cache = cache.k;
  m.block_tables = b.block_tables;
  m.seq_lens = b.seq_lens;
  m.query_start_loc = b.query_start_loc;
  m.scale = scale;
  m.max_q_len = b.max_q_len;
  m.max_seq_len = b.max_seq_len;
  m.host_seq_lens = b.host_seq_lens;
  m.host_query_start_loc = b.host_query_start_loc;
  ops::mla_attention(ctx, m);

  // Back from latent space per head: out[t, h] = lat[t, h] @ W_UV[h]^T.
  Tensor attn = ctx.act({T, H * v_dim});
  const int64_t rows = nope_dim + v_dim, ldb = kv_b.strides[0];  // head h's W_UV: rows nope.. of its block
  per_head_matmul(ctx, per_head(attn, 0, H, T, v_dim, v_dim, H * v_dim), per_head(m.out, 0, H, T, R, R, H * R),
                  per_head(kv_b, nope_dim * ldb, H, v_dim, R, rows * ldb, ldb));
  return o.forward(ctx, attn);
}

}  // namespace portllm
