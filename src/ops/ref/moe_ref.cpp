// Reference MoE kernels: routing (softmax / grouped / biased sigmoid), permutation by expert,
// grouped GEMM (float or fp8 block-scaled weights; rows grouped by offsets or gathered through
// the top-k ids), the weighted combine, and the fused down projection + combine. Double math,
// scalar loops; the oracle for every backend's MoE kernels.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/op_args_moe.h"
#include "ops/ref/moe_route_math.h"
#include "ops/ref/ref_kernels.h"
#include "ops/ref/ref_util.h"
#include "ops/registry.h"

namespace portllm::ref {

namespace {
constexpr int P = KernelInfo::kReferencePriority;

// Element (i, j) of a 2-D i32 tensor.
int64_t id2(const Tensor& t, int64_t i, int64_t j) {
  return static_cast<const int32_t*>(t.data)[i * t.strides[0] + j * t.strides[1]];
}

void route(const MoeRouteArgs& a, Stream&) {
  const int64_t T = a.logits.size(0), E = a.logits.size(1);
  std::vector<double> logits(static_cast<size_t>(E)), bias;
  if (a.bias.defined()) {
    bias.resize(size_t(E));
    for (int64_t e = 0; e < E; ++e) bias[size_t(e)] = load(a.bias.dtype, a.bias.data, e);
  }
  std::vector<int32_t> ids(static_cast<size_t>(a.top_k));
  std::vector<float> w(static_cast<size_t>(a.top_k));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < E; ++e) logits[size_t(e)] = at(a.logits, t, e);
    moe_route_row(a, logits.data(), bias.empty() ? nullptr : bias.data(), E, ids.data(), w.data());
    for (int j = 0; j < a.top_k; ++j) {
      static_cast<int32_t*>(a.topk_ids.data)[t * a.topk_ids.strides[0] + j] = ids[size_t(j)];
      put(a.topk_weights, t, j, w[size_t(j)]);
    }
  }
}

void permute(const MoePermuteArgs& a, Stream&) {
  const int64_t T = a.topk_ids.size(0), k = a.topk_ids.size(1), H = a.x.size(1), R = a.x_sorted.size(0);
  const int64_t E = a.num_experts, align = std::max(1, a.align);
  std::vector<int64_t> count(static_cast<size_t>(E), 0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) count[size_t(id2(a.topk_ids, t, j))]++;
  std::vector<int64_t> off(static_cast<size_t>(E + 1), 0);
  for (int64_t e = 0; e < E; ++e) off[size_t(e + 1)] = off[size_t(e)] + (count[size_t(e)] + align - 1) / align * align;
  auto* sorted = static_cast<int32_t*>(a.sorted_token.data);
  for (int64_t r = 0; r < R; ++r) {
    sorted[r] = -1;
    for (int64_t h = 0; h < H; ++h) put(a.x_sorted, r, h, 0.0);
  }
  std::vector<int64_t> fill(off.begin(), off.end() - 1);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = id2(a.topk_ids, t, j), r = fill[size_t(e)]++;
      sorted[r] = int32_t(t);
      static_cast<int32_t*>(a.dst_row.data)[t * a.dst_row.strides[0] + j] = int32_t(r);
      for (int64_t h = 0; h < H; ++h) put(a.x_sorted, r, h, at(a.x, t, h));
    }
  for (int64_t e = 0; e <= E; ++e) static_cast<int32_t*>(a.expert_offsets.data)[e] = int32_t(off[size_t(e)]);
}

// v rounded to dtype t (a value stored in a tensor of that dtype, read back).
double round_to(DType t, double v) {
  uint64_t buf = 0;
  store(t, &buf, 0, v);
  return load(t, &buf, 0);
}

// Expert e's dequantized weight W[e][n, kk] (fp8: times its block scale).
double expert_w(const Tensor& w, const Tensor& scale, int block_n, int block_k, int64_t e, int64_t n, int64_t kk) {
  const int64_t N = w.size(1), K = w.size(2);
  double v = load(w.dtype, w.data, (e * N + n) * K + kk);
  if (w.dtype == DType::F8E4M3) {
    const int64_t SN = scale.size(1), SK = scale.size(2);
    v *= load(DType::F32, scale.data, (e * SN + n / block_n) * SK + kk / block_k);
  }
  return v;
}

// SILU_MUL of one stored [gate | up] pair: g and u as the out dtype holds them (put rounds h).
double silu_mul_of(DType t, double g, double u) {
  g = round_to(t, g);
  return g / (1.0 + std::exp(-g)) * round_to(t, u);
}

void gemm(const MoeGemmArgs& a, Stream&) {
  const int64_t E = a.w.size(0), N = a.w.size(1), K = a.w.size(2);
  if (a.swiglu && (!a.topk_ids.defined() || N % 2 != 0))
    PL_THROW("moe_gemm: the SwiGLU epilogue needs gather mode and an even N (stacked gate | up)");
  std::vector<double> acc(static_cast<size_t>(N));
  // Row r of x against W[e] into row o of out.
  auto row = [&](int64_t e, int64_t r, int64_t o) {
    for (int64_t n = 0; n < N; ++n) {
      acc[size_t(n)] = 0;
      for (int64_t kk = 0; kk < K; ++kk)
        acc[size_t(n)] += at(a.x, r, kk) * expert_w(a.w, a.w_scale, a.block_n, a.block_k, e, n, kk);
    }
    if (!a.swiglu) {
      for (int64_t n = 0; n < N; ++n) put(a.out, o, n, acc[size_t(n)]);
      return;
    }
    for (int64_t c = 0; c < N / 2; ++c) put(a.out, o, c, silu_mul_of(a.out.dtype, acc[size_t(c)], acc[size_t(N / 2 + c)]));
  };
  if (a.topk_ids.defined()) {  // gather mode: assignment t*k+j reads token row t
    const int64_t T = a.topk_ids.size(0), k = a.topk_ids.size(1);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < k; ++j) row(id2(a.topk_ids, t, j), t, t * k + j);
    return;
  }
  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = idx(a.expert_offsets, e), r1 = idx(a.expert_offsets, e + 1);
    for (int64_t r = r0; r < r1; ++r) row(e, r, r);
  }
}

void down_combine(const MoeDownCombineArgs& a, Stream&) {
  const int64_t T = a.topk_ids.size(0), k = a.topk_ids.size(1), H = a.w.size(1), I = a.w.size(2);
  std::vector<double> h(static_cast<size_t>(k * I)), acc(static_cast<size_t>(H));
  for (int64_t t = 0; t < T; ++t) {
    // SwiGLU of each assignment, rounded to the activation dtype as SILU_MUL's output would be
    // (activated: the rows are that already).
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < I; ++i) {
        const int64_t row = t * k + j;
        h[size_t(j * I + i)] = a.activated ? at(a.gate_up, row, i)
                                           : round_to(a.gate_up.dtype, silu_mul_of(a.gate_up.dtype, at(a.gate_up, row, i),
                                                                                   at(a.gate_up, row, I + i)));
      }
    for (int64_t n = 0; n < H; ++n) acc[size_t(n)] = a.shared.defined() ? at(a.shared, t, n) : 0.0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = id2(a.topk_ids, t, j);
      const double wj = at(a.topk_weights, t, j);
      for (int64_t n = 0; n < H; ++n) {
        double dot = 0;
        for (int64_t i = 0; i < I; ++i)
          dot += expert_w(a.w, a.w_scale, a.block_n, a.block_k, e, n, i) * h[size_t(j * I + i)];
        acc[size_t(n)] += wj * dot;
      }
    }
    for (int64_t n = 0; n < H; ++n) put(a.out, t, n, acc[size_t(n)]);
  }
}

void combine(const MoeCombineArgs& a, Stream&) {
  const int64_t T = a.dst_row.size(0), k = a.dst_row.size(1), H = a.y.size(1);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      double acc = a.shared.defined() ? at(a.shared, t, h) : 0.0;
      for (int64_t j = 0; j < k; ++j)
        acc += at(a.weights, t, j) * at(a.y, id2(a.dst_row, t, j), h);
      put(a.out, t, h, acc);
    }
}
}  // namespace

void register_moe_ref() {
  auto any = [](const OpDesc&, const DeviceCaps&) { return true; };
  const auto C = DeviceKind::CPU;
  register_kernel<MoeRouteArgs>(Op::MOE_ROUTE_SOFTMAX, C, "ref.moe_route_softmax", P, any, route);
  register_kernel<MoeRouteArgs>(Op::MOE_ROUTE_GROUPED, C, "ref.moe_route_grouped", P, any, route);
  register_kernel<MoePermuteArgs>(Op::MOE_PERMUTE, C, "ref.moe_permute", P, any, permute);
  register_kernel<MoeGemmArgs>(Op::MOE_GEMM, C, "ref.moe_gemm", P, any, gemm);
  register_kernel<MoeCombineArgs>(Op::MOE_COMBINE, C, "ref.moe_combine", P, any, combine);
  register_kernel<MoeDownCombineArgs>(Op::MOE_DOWN_COMBINE, C, "ref.moe_down_combine", P, any, down_combine);
}

}  // namespace portllm::ref
