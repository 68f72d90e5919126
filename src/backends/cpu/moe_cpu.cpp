// CPU MoE kernels (f32 activations). Routing and combine are threaded over tokens; the grouped
// GEMM is threaded over (expert, output panel) work items so that a decode step, where each
// expert sees a handful of rows, still spreads every expert's weight bytes over all cores.
// Expert weights (f32/f16/bf16 or fp8 block-scaled) are used in place.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/weight_rows.h"
#include "core/thread_pool.h"
#include "ops/op_args_moe.h"
#include "ops/ref/moe_route_math.h"
#include "ops/registry.h"

namespace portllm::cpu {

namespace {
void route(const MoeRouteArgs& a, Stream&) {
  const int64_t T = a.logits.size(0), E = a.logits.size(1);
  std::vector<double> bias;
  if (a.bias.defined()) {
    bias.resize(size_t(E));
    for (int64_t e = 0; e < E; ++e) bias[size_t(e)] = a.bias.ptr<float>()[e];
  }
  ThreadPool::global().parallel_for(T, [&](int64_t t0, int64_t t1, int) {
    std::vector<double> logits(static_cast<size_t>(E));
    for (int64_t t = t0; t < t1; ++t) {
      const float* l = a.logits.ptr<float>() + t * a.logits.strides[0];
      for (int64_t e = 0; e < E; ++e) logits[size_t(e)] = l[e];
      ref::moe_route_row(a, logits.data(), bias.empty() ? nullptr : bias.data(), E,
                         a.topk_ids.ptr<int32_t>() + t * a.topk_ids.strides[0],
                         a.topk_weights.ptr<float>() + t * a.topk_weights.strides[0]);
    }
  }, 8);
}

void permute(const MoePermuteArgs& a, Stream&) {
  const int64_t T = a.topk_ids.size(0), k = a.topk_ids.size(1), H = a.x.size(1), R = a.x_sorted.size(0);
  const int64_t E = a.num_experts, align = std::max(1, a.align);
  const int32_t* ids = a.topk_ids.ptr<int32_t>();
  const int64_t ids_ld = a.topk_ids.strides[0];
  std::vector<int64_t> off(static_cast<size_t>(E + 1), 0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) off[size_t(ids[t * ids_ld + j] + 1)]++;
  for (int64_t e = 0; e < E; ++e) off[size_t(e + 1)] = off[size_t(e)] + (off[size_t(e + 1)] + align - 1) / align * align;
  int32_t* sorted = a.sorted_token.ptr<int32_t>();
  std::fill(sorted, sorted + R, -1);
  std::vector<int64_t> fill(off.begin(), off.end() - 1);
  int32_t* dst = a.dst_row.ptr<int32_t>();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t r = fill[size_t(ids[t * ids_ld + j])]++;
      sorted[r] = int32_t(t);
      dst[t * a.dst_row.strides[0] + j] = int32_t(r);
    }
  for (int64_t e = 0; e <= E; ++e) a.expert_offsets.ptr<int32_t>()[e] = int32_t(off[size_t(e)]);
  ThreadPool::global().parallel_for(R, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      float* o = a.x_sorted.ptr<float>() + r * a.x_sorted.strides[0];
      if (sorted[r] < 0) std::fill(o, o + H, 0.f);
      else std::memcpy(o, a.x.ptr<float>() + sorted[r] * a.x.strides[0], size_t(H) * 4);
    }
  }, 16);
}

void gemm(const MoeGemmArgs& a, Stream&) {
  const int64_t E = a.w.size(0), N = a.w.size(1), K = a.w.size(2);
  const int32_t* off = a.expert_offsets.ptr<int32_t>();
  const bool fp8 = a.w.dtype == DType::F8E4M3;
  int64_t max_rows = 0;
  for (int64_t e = 0; e < E; ++e) max_rows = std::max<int64_t>(max_rows, off[e + 1] - off[e]);
  const int64_t panel = max_rows <= 4 ? 32 : 64;
  const int64_t per_expert = (N + panel - 1) / panel;
  std::vector<std::pair<int32_t, int32_t>> items;  // (expert, panel)
  for (int64_t e = 0; e < E; ++e)
    if (off[e + 1] > off[e])
      for (int64_t p = 0; p < per_expert; ++p) items.emplace_back(int32_t(e), int32_t(p));
  const size_t wes = dtype_size(a.w.dtype);
  ThreadPool::global().parallel_for(int64_t(items.size()), [&](int64_t i0, int64_t i1, int) {
    std::vector<float> buf;
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t e = items[size_t(i)].first, n0 = int64_t(items[size_t(i)].second) * panel;
      const int64_t nn = std::min(panel, N - n0), r0 = off[e], M = off[e + 1] - r0;
      Fp8Scales s;
      if (fp8) {
        const int64_t SN = a.w_scale.size(1), SK = a.w_scale.size(2);
        s.scale = a.w_scale.ptr<float>() + e * SN * SK;
        s.ld = SK;
        s.block_n = a.block_n;
        s.block_k = a.block_k;
      }
      const void* we = static_cast<const char*>(a.w.data) + e * N * K * int64_t(wes);
      gemm_panel(a.x.ptr<float>() + r0 * a.x.strides[0], a.x.strides[0], M, we, a.w.dtype, K, K, n0, nn, s,
                 a.out.ptr<float>() + r0 * a.out.strides[0], a.out.strides[0], buf);
    }
  });
}

void combine(const MoeCombineArgs& a, Stream&) {
  const int64_t T = a.dst_row.size(0), k = a.dst_row.size(1), H = a.y.size(1);
  ThreadPool::global().parallel_for(T, [&](int64_t t0, int64_t t1, int) {
    std::vector<float> acc(static_cast<size_t>(H));
    for (int64_t t = t0; t < t1; ++t) {
      if (a.shared.defined()) std::memcpy(acc.data(), a.shared.ptr<float>() + t * a.shared.strides[0], size_t(H) * 4);
      else std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t j = 0; j < k; ++j) {
        const float w = a.weights.ptr<float>()[t * a.weights.strides[0] + j];
        const float* y = a.y.ptr<float>() + a.dst_row.ptr<int32_t>()[t * a.dst_row.strides[0] + j] * a.y.strides[0];
        for (int64_t h = 0; h < H; ++h) acc[size_t(h)] += w * y[h];
      }
      std::memcpy(a.out.ptr<float>() + t * a.out.strides[0], acc.data(), size_t(H) * 4);
    }
  }, 4);
}

bool f32_act(const OpDesc& d, const DeviceCaps&) { return d.dtype[0] == DType::F32; }
}  // namespace

void register_moe_kernels() {
  const auto C = DeviceKind::CPU;
  auto route_ok = [](const OpDesc& d, const DeviceCaps&) { return d.dtype[0] == DType::F32 && d.dtype[1] == DType::F32; };
  auto gemm_ok = [](const OpDesc& d, const DeviceCaps& c) {
    const DType w = d.dtype[1];
    // flags bit0 (gather mode) is not implemented here: the op layer then runs the op sequence.
    return c.avx2 && d.flags == 0 && d.dtype[0] == DType::F32 && d.dtype[2] == DType::F32 &&
           (w == DType::F32 || w == DType::BF16 || w == DType::F16 || w == DType::F8E4M3);
  };
  auto combine_ok = [](const OpDesc& d, const DeviceCaps&) {
    return d.dtype[0] == DType::F32 && d.dtype[1] == DType::F32;
  };
  register_kernel<MoeRouteArgs>(Op::MOE_ROUTE_SOFTMAX, C, "cpu.moe_route", 10, route_ok, route);
  register_kernel<MoeRouteArgs>(Op::MOE_ROUTE_GROUPED, C, "cpu.moe_route", 10, route_ok, route);
  register_kernel<MoePermuteArgs>(Op::MOE_PERMUTE, C, "cpu.moe_permute", 10, f32_act, permute);
  register_kernel<MoeGemmArgs>(Op::MOE_GEMM, C, "cpu.moe_gemm", 10, gemm_ok, gemm);
  register_kernel<MoeCombineArgs>(Op::MOE_COMBINE, C, "cpu.moe_combine", 10, combine_ok, combine);
}

}  // namespace portllm::cpu
