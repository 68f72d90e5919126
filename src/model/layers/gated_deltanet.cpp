#include "model/layers/gated_deltanet.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "model/layers/attention.h"
#include "ops/ops.h"
#include "ops/ops_hybrid.h"

namespace portllm {

namespace {
// Qwen3-Next groups its projections per key head g: in_proj_qkvz rows are, for each g,
// [q_g (Dk) | k_g (Dk) | v of the r = Hv/Hk value heads of g (r*Dv) | z of those heads (r*Dv)]
// and in_proj_ba rows are [b (r) | a (r)] per g. Reorder both into [q | k | v | z | b | a]
// (head-major within each part) so the forward pass is the same as Qwen3.5's.
Linear load_fused_qkvz(WeightLoader& w, const std::string& p, const GatedDeltaNet& g, int64_t hidden) {
  const int64_t Hk = g.Hk, Hv = g.Hv, Dk = g.Dk, Dv = g.Dv, r = Hv / Hk;
  const int64_t qkvz_rows = 2 * Hk * Dk + 2 * Hv * Dv, ba_rows = 2 * Hv;
  PL_CHECK(!w.is_fp8_linear(p + ".in_proj_qkvz"), "{}.in_proj_qkvz: fp8 weights are not supported", p);
  Tensor qkvz = w.load_host(p + ".in_proj_qkvz.weight", {qkvz_rows, hidden});
  Tensor ba = w.load_host(p + ".in_proj_ba.weight", {ba_rows, hidden});
  PL_CHECK(qkvz.dtype == ba.dtype && qkvz.is_contiguous() && ba.is_contiguous(), "{}: in_proj_qkvz/ba layout", p);
  const size_t row_bytes = size_t(hidden) * dtype_size(qkvz.dtype);
  std::vector<uint8_t> host(size_t(qkvz_rows + ba_rows) * row_bytes);
  auto copy_rows = [&](int64_t dst_row, const Tensor& src, int64_t src_row, int64_t n) {
    std::memcpy(host.data() + size_t(dst_row) * row_bytes,
                static_cast<const uint8_t*>(src.data) + size_t(src_row) * row_bytes, size_t(n) * row_bytes);
  };
  const int64_t group = 2 * Dk + 2 * r * Dv;  // rows per key head in in_proj_qkvz
  const int64_t q0 = 0, k0 = Hk * Dk, v0 = 2 * Hk * Dk, z0 = v0 + Hv * Dv, b0 = z0 + Hv * Dv, a0 = b0 + Hv;
  for (int64_t h = 0; h < Hk; ++h) {
    const int64_t s = h * group;
    copy_rows(q0 + h * Dk, qkvz, s, Dk);
    copy_rows(k0 + h * Dk, qkvz, s + Dk, Dk);
    copy_rows(v0 + h * r * Dv, qkvz, s + 2 * Dk, r * Dv);
    copy_rows(z0 + h * r * Dv, qkvz, s + 2 * Dk + r * Dv, r * Dv);
    copy_rows(b0 + h * r, ba, h * 2 * r, r);
    copy_rows(a0 + h * r, ba, h * 2 * r + r, r);
  }
  Linear l;
  l.in = hidden;
  l.out = qkvz_rows + ba_rows;
  l.weight = w.device().empty(qkvz.dtype, {l.out, hidden});
  w.device().copy_to_device(l.weight.data, host.data(), host.size());
  w.device().synchronize();
  return l;
}
}  // namespace

GatedDeltaNet GatedDeltaNet::load(WeightLoader& w, const std::string& p, const ModelConfig& cfg, bool fused_qkvz) {
  GatedDeltaNet g;
  g.Hk = cfg.get_int("linear_num_key_heads");
  g.Hv = cfg.get_int("linear_num_value_heads");
  g.Dk = cfg.get_int("linear_key_head_dim");
  g.Dv = cfg.get_int("linear_value_head_dim");
  g.K = cfg.get_int("linear_conv_kernel_dim", 4);
  g.eps = float(cfg.rms_norm_eps);
  if (g.Hk <= 0 || g.Hv <= 0 || g.Hv % g.Hk != 0)
    PL_THROW("{}: linear_num_value_heads ({}) must be a positive multiple of linear_num_key_heads ({})", cfg.source,
             g.Hv, g.Hk);
  if (g.K < 2 || g.K > 16) PL_THROW("{}: linear_conv_kernel_dim {} is outside 2..16", cfg.source, g.K);
  const int64_t H = cfg.hidden_size, C = g.conv_dim(), Vd = g.Hv * g.Dv;
  if (fused_qkvz)
    g.in_proj = load_fused_qkvz(w, p, g, H);
  else
    g.in_proj = Linear::load_merged(w, {p + ".in_proj_qkv", p + ".in_proj_z", p + ".in_proj_b", p + ".in_proj_a"}, H,
                                    {C, Vd, g.Hv, g.Hv}, false);
  g.out_proj = Linear::load(w, p + ".out_proj", Vd, H, false);
  g.conv_w = w.load(p + ".conv1d.weight", {C, 1, g.K}).reshape({C, g.K});
  g.A_log = w.load(p + ".A_log", {g.Hv});
  g.dt_bias = w.load(p + ".dt_bias", {g.Hv});
  g.norm = w.load(p + ".norm.weight", {g.Dv});
  return g;
}

LayerCacheSpec GatedDeltaNet::cache_spec() const {
  LayerCacheSpec s;
  s.kind = LayerCacheSpec::Kind::Recurrent;
  s.state_shapes = {{K - 1, conv_dim()}, {Hv, Dk, Dv}};
  s.state_dtype = DType::F32;
  return s;
}

SublayerOut GatedDeltaNet::forward(OpContext& ctx, const ForwardBatch& b, LayerCache& cache, NormedInput& x) const {
  const int64_t T = x.rows(), C = conv_dim(), Vd = Hv * Dv;
  PL_CHECK(cache.state.size() == 2, "gated delta-net layer needs 2 state tensors, got {}", cache.state.size());
  // The device tensor is what kernels must have; a decode graph's batch has no host mirrors
  // (runtime/decode_graphs.h), an eager one mirrors every sequence.
  PL_CHECK(b.state_slots.defined() && b.state_slots.size(0) == b.num_seqs &&
               (b.host_state_slots.empty() || int(b.host_state_slots.size()) == b.num_seqs),
           "gated delta-net layer needs a state slot per sequence");
  Tensor proj = x.project(ctx, in_proj);

  CausalConv1dArgs conv;
  conv.out = ctx.act({T, C});
  conv.x = proj.slice(1, 0, C);
  conv.weight = conv_w;
  conv.conv_state = cache.state[0];
  conv.query_start_loc = b.query_start_loc;
  conv.state_slots = b.state_slots;
  conv.has_initial_state = b.has_initial_state;
  conv.silu = true;
  conv.max_q_len = b.max_q_len;
  conv.host_query_start_loc = b.host_query_start_loc;
  conv.host_state_slots = b.host_state_slots;
  conv.host_has_initial_state = b.host_has_initial_state;
  ops::causal_conv1d(ctx, conv);

  GatedDeltaRuleArgs r;
  r.out = ctx.act({T, Hv, Dv});
  r.q = heads_view(conv.out, 0, Hk, Dk);
  r.k = heads_view(conv.out, Hk * Dk, Hk, Dk);
  r.v = heads_view(conv.out, 2 * Hk * Dk, Hv, Dv);
  r.b = proj.slice(1, C + Vd, Hv);
  r.a = proj.slice(1, C + Vd + Hv, Hv);
  r.A_log = A_log;
  r.dt_bias = dt_bias;
  r.state = cache.state[1];
  r.query_start_loc = b.query_start_loc;
  r.state_slots = b.state_slots;
  r.has_initial_state = b.has_initial_state;
  r.scale = float(1.0 / std::sqrt(double(Dk)));
  r.l2norm_qk = true;
  r.max_q_len = b.max_q_len;
  r.host_query_start_loc = b.host_query_start_loc;
  r.host_state_slots = b.host_state_slots;
  r.host_has_initial_state = b.host_has_initial_state;
  ops::gated_delta_rule(ctx, r);

  ops::gated_rms_norm(ctx, r.out, r.out, heads_view(proj, C, Hv, Dv), norm, eps);
  return SublayerOut::last_projection(ctx, out_proj, r.out.reshape({T, Vd}));
}

}  // namespace portllm
