#include "model/layers/moe.h"

#include <cstring>

#include "core/error.h"
#include "ops/ops.h"
#include "ops/ops_moe.h"

namespace portllm {

namespace {
// One checkpoint projection of one expert: weight [N, K] and its fp8 scale as block scales
// (a per-tensor scale becomes one block covering the whole matrix).
struct ExpertPart {
  Tensor w, scale;
  int block_n = 0, block_k = 0;
};

ExpertPart load_part(WeightLoader& w, const std::string& p, int64_t N, int64_t K) {
  ExpertPart e;
  if (!w.is_fp8_linear(p)) {
    e.w = w.load_host(p + ".weight", {N, K});
    return e;
  }
  const auto& q = w.config().quant;
  e.w = w.load_host(p + ".weight", {N, K}, DType::F8E4M3);
  if (w.has(p + ".weight_scale_inv") && (q.block_n > 0 || !w.is_dummy())) {
    e.block_n = q.block_n > 0 ? q.block_n : 128;
    e.block_k = q.block_k > 0 ? q.block_k : 128;
    e.scale = w.load_host(p + ".weight_scale_inv", {(N + e.block_n - 1) / e.block_n, (K + e.block_k - 1) / e.block_k},
                          DType::F32);
  } else {
    e.block_n = int(N);
    e.block_k = int(K);
    e.scale = w.load_host(p + ".weight_scale", w.stored_shape(p + ".weight_scale", {}), DType::F32).reshape({1, 1});
  }
  PL_CHECK(e.scale.dtype == DType::F32, "{}: fp8 scales must be f32", p);
  return e;
}

// Copies contiguous host bytes into dst at byte offset off.
void put_bytes(Device& dev, const Tensor& dst, size_t off, const Tensor& src) {
  PL_CHECK(src.is_contiguous(), "expert weight is not contiguous");
  dev.copy_to_device(static_cast<char*>(dst.data) + off, src.data, src.nbytes());
}

// Stacks per-expert parts (each a list of projections concatenated along N) into [E, N, K].
ExpertWeights stack(WeightLoader& w, const std::string& prefix, const std::vector<std::string>& projs,
                    int64_t E, int64_t N_each, int64_t K) {
  Device& dev = w.device();
  ExpertWeights out;
  const int64_t N = N_each * int64_t(projs.size());
  for (int64_t e = 0; e < E; ++e) {
    size_t w_off = 0, s_off = 0;
    for (size_t i = 0; i < projs.size(); ++i) {
      const std::string p = prefix + ".experts." + std::to_string(e) + "." + projs[i];
      ExpertPart part = load_part(w, p, N_each, K);
      if (!out.w.defined()) {
        out.w = dev.empty(part.w.dtype, {E, N, K});
        out.block_n = part.block_n;
        out.block_k = part.block_k;
        if (part.scale.defined()) {
          // Parts are stacked along N, so their scale rows stack too when N_each fills whole
          // blocks; a per-tensor scale is one block of N_each rows.
          PL_CHECK(N_each % part.block_n == 0 || projs.size() == 1,
                   "{}: {} rows do not fill whole {}-row scale blocks; cannot stack", p, N_each, part.block_n);
          out.scale = dev.empty(DType::F32, {E, (N + part.block_n - 1) / part.block_n, part.scale.size(1)});
        }
      }
      PL_CHECK(part.w.dtype == out.w.dtype && part.block_n == out.block_n, "{}: experts differ in dtype or scale layout", p);
      put_bytes(dev, out.w, size_t(e) * out.w.nbytes() / size_t(E) + w_off, part.w);
      w_off += part.w.nbytes();
      if (out.scale.defined()) {
        put_bytes(dev, out.scale, size_t(e) * out.scale.nbytes() / size_t(E) + s_off, part.scale);
        s_off += part.scale.nbytes();
      }
    }
  }
  dev.synchronize();
  return out;
}

// Fused 3-D tensors (newer transformers exports), or one stacked dummy tensor per projection.
ExpertWeights load_fused(WeightLoader& w, const std::string& name, const std::string& fp8_probe, int64_t E,
                         int64_t N, int64_t K) {
  ExpertWeights out;
  if (w.is_dummy() && w.is_fp8_linear(fp8_probe)) {
    const auto& q = w.config().quant;
    out.block_n = q.block_n > 0 ? q.block_n : int(N);
    out.block_k = q.block_k > 0 ? q.block_k : int(K);
    out.w = w.load(name, {E, N, K}, {}, DType::F8E4M3);
    out.scale = w.load(name + ".weight_scale_inv",
                       {E, (N + out.block_n - 1) / out.block_n, (K + out.block_k - 1) / out.block_k}, {}, DType::F32);
    return out;
  }
  PL_CHECK(w.is_dummy() || w.stored_dtype(name) != DType::F8E4M3, "{}: fused fp8 expert tensors are not supported", name);
  out.w = w.load(name, {E, N, K});
  return out;
}
}  // namespace

SparseMoe SparseMoe::load(WeightLoader& w, const std::string& p, const MoeSpec& s) {
  SparseMoe m;
  m.spec = s;
  const int64_t E = s.num_experts, H = s.hidden, I = s.intermediate;
  // The routing kernels index [tokens, top_k] buffers and groups of E / n_group experts.
  const std::string& src = w.config().source;
  if (E < 1 || I < 1) PL_THROW("{}: a sparse layer needs experts ({}) and moe_intermediate_size ({}) >= 1", src, E, I);
  if (s.top_k < 1 || s.top_k > E)
    PL_THROW("{}: num_experts_per_tok ({}) must be in [1, {}] (the number of experts)", src, s.top_k, E);
  if (s.n_group < 1 || s.topk_group < 1 || s.topk_group > s.n_group || E % s.n_group != 0 ||
      s.top_k > s.topk_group * (E / s.n_group))
    PL_THROW("{}: topk_group ({}) must be in [1, n_group ({})], n_group must divide the {} experts, and the "
             "chosen groups must hold num_experts_per_tok ({}) experts", src, s.topk_group, s.n_group, E, s.top_k);
  m.router = w.load(p + ".gate.weight", {E, H});
  if (s.score_bias) m.score_bias = w.load(p + ".gate.e_score_correction_bias", {E}, {}, DType::F32);
  const std::string e0 = p + ".experts.0.gate_proj";
  if (!w.is_dummy() && w.has(e0 + ".weight")) {
    m.gate_up = stack(w, p, {"gate_proj", "up_proj"}, E, I, H);
    m.down = stack(w, p, {"down_proj"}, E, H, I);
  } else {
    m.gate_up = load_fused(w, p + ".experts.gate_up_proj", e0, E, 2 * I, H);
    m.down = load_fused(w, p + ".experts.down_proj", p + ".experts.0.down_proj", E, H, I);
  }
  if (s.shared_intermediate > 0) m.shared = GatedMlp::load(w, p + ".shared_experts", H, s.shared_intermediate);
  return m;
}

Tensor SparseMoe::forward(OpContext& ctx, NormedInput& in) const {
  const int64_t T = in.rows(), H = spec.hidden, E = spec.num_experts, k = spec.top_k;
  Tensor logits = ctx.empty(DType::F32, {T, E});
  in.project(ctx, router, logits, /*keep_h=*/true);  // the experts read h too
  const Tensor& x = in.hidden(ctx);

  MoeRouteArgs r;
  r.topk_ids = ctx.empty(DType::I32, {T, k});
  r.topk_weights = ctx.empty(DType::F32, {T, k});
  r.logits = logits;
  r.bias = score_bias;
  r.top_k = int(k);
  r.renormalize = spec.renormalize;
  r.scale = spec.scale;
  r.scoring = spec.scoring;
  r.group_score = spec.group_score;
  r.n_group = spec.n_group;
  r.topk_group = spec.topk_group;
  ops::moe_route(ctx, r);

  // Experts: the op layer runs them as two launches at small batches where the device has the
  // fused kernels (gather-mode gate_up GEMM, then down + SiLU + weighted combine), else as
  // permute / grouped GEMM / SiLU / grouped GEMM / combine.
  Tensor out = shared ? shared->forward(ctx, x) : ctx.act({T, H});
  ops::moe_experts(ctx, ops::MoeExpertsArgs{out, x, r.topk_ids, r.topk_weights, gate_up, down,
                                            shared ? out : Tensor()});
  return out;
}

}  // namespace portllm
