// The norm half of MATMUL_ADD_RMS_NORM after a split-K GEMM (matmul_split_k_norm.cpp): the GEMM
// leaves S partial products [S, M, N] in f32, and this kernel, which runs the residual add and the
// RMSNorm anyway, adds them up on its way. So the split costs the GEMM no reduction launch of its
// own, and the projection's output is never stored in the activation dtype.
//
// Per row: y = round(sum_s partial[s] (+ bias)) (MATMUL's rounding: one rounding of the f32 sum),
// residual = round(residual + y), h = rmsnorm(residual) * (offset + w) (ADD_RMS_NORM's), so the
// result equals MATMUL followed by ADD_RMS_NORM bit for bit up to the order of the f32 additions.
// One block of kThreads per row, NVT vectors of 8 values per thread (16-byte accesses of the
// activation, two of the f32 partials); the norm weight and the bias, weights, are loaded before
// the programmatic wait.
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "backends/gpu/vec_io.cuh"
#include "ops/op_args.h"

namespace portllm::gpu {

namespace {
constexpr int kThreads = 256;
constexpr int kN = 8;  // values per vector: one 16-byte access of bf16/f16

// Every load of the row (S partial vectors and the residual's, per vector of the thread) is issued
// before the first is used: a decode batch is a few hundred rows, one block each, so only a few
// warps per SM carry each other's latency and each thread must keep many bytes in flight.
template <class TA, int S, int NVT>
__global__ void __launch_bounds__(kThreads)
    split_k_add_rms_norm_kernel(TA* h, int64_t h_ld, TA* res, int64_t res_ld, const float* part, int64_t part_stride,
                                const TA* bias, const TA* w, int D, float eps, float offset) {
  __shared__ float red[32];
  const int nv = D / kN;
  float wv[NVT][kN], bv[NVT][kN];
#pragma unroll
  for (int k = 0; k < NVT; ++k) {
    const int j = k * kThreads + int(threadIdx.x);
#pragma unroll
    for (int e = 0; e < kN; ++e) wv[k][e] = bv[k][e] = 0.f;
    if (j < nv) {
      load_vec<TA, kN>(w + j * kN, wv[k]);
      if (bias) load_vec<TA, kN>(bias + j * kN, bv[k]);
    }
  }
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  const int64_t r = blockIdx.x;
  TA* rrow = res + r * res_ld;
  const float* prow = part + r * int64_t(D);
  float p[NVT][S][kN], v[NVT][kN];
#pragma unroll
  for (int k = 0; k < NVT; ++k) {
    const int j = k * kThreads + int(threadIdx.x);
    if (j >= nv) continue;
#pragma unroll
    for (int sl = 0; sl < S; ++sl) load_vec<float, kN>(prow + sl * part_stride + j * kN, p[k][sl]);
    load_vec<TA, kN>(rrow + j * kN, v[k]);
  }
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < NVT; ++k) {
    const int j = k * kThreads + int(threadIdx.x);
    if (j >= nv) {
#pragma unroll
      for (int e = 0; e < kN; ++e) v[k][e] = 0.f;
      continue;
    }
#pragma unroll
    for (int e = 0; e < kN; ++e) {
      float y = p[k][0][e];
#pragma unroll
      for (int sl = 1; sl < S; ++sl) y += p[k][sl][e];
      v[k][e] = round_to<TA>(v[k][e] + round_to<TA>(y + bv[k][e]));  // the residual keeps the activation dtype
      ss += v[k][e] * v[k][e];
    }
    store_vec<TA, kN>(rrow + j * kN, v[k]);
  }
  const float inv = rsqrtf(block_sum(ss, red) / float(D) + eps);
  TA* hrow = h + r * h_ld;
#pragma unroll
  for (int k = 0; k < NVT; ++k) {
    const int j = k * kThreads + int(threadIdx.x);
    if (j >= nv) continue;
    float o[kN];
#pragma unroll
    for (int e = 0; e < kN; ++e) o[e] = v[k][e] * inv * (offset + wv[k][e]);
    store_vec<TA, kN>(hrow + j * kN, o);
  }
}
}  // namespace

void launch_split_k_add_rms_norm(const MatmulAddRmsNormArgs& a, const float* partials, int splits, Stream& s) {
  const int64_t M = a.residual.size(0), D = a.residual.size(1);
  static_assert(kSplitKNormMaxWidth == 4 * kThreads * kN, "the widest row is 4 vectors per thread");
  if (D > kSplitKNormMaxWidth || !vec_view(a.residual, kN) || !vec_view(a.h, kN) || !vec_view(a.norm_weight, kN) ||
      (a.bias.defined() && !vec_view(a.bias, kN)))
    fail("MATMUL_ADD_RMS_NORM split-K norm: the residual, h, the norm weight and the bias need rows of whole "
         "16-byte vectors, at most 8192 values");
  if (splits < 2 || splits > kSplitKNormMaxSplits) fail("MATMUL_ADD_RMS_NORM split-K norm: 2 to 4 slices");
  const int nvt = int((D / kN + kThreads - 1) / kThreads);
  dispatch_float(a.residual.dtype, [&](auto ta) {
    using TA = typename decltype(ta)::type;
    if constexpr (sizeof(TA) != 2) {
      fail("MATMUL_ADD_RMS_NORM split-K norm: bf16 or f16 activations");
    } else {
      auto go = [&](auto s_tag, auto nvt_tag) {
        launch_programmatic(s, split_k_add_rms_norm_kernel<TA, decltype(s_tag)::value, decltype(nvt_tag)::value>,
                            dim3(unsigned(M)), dim3(kThreads), 0, a.h.ptr<TA>(), a.h.strides[0],
                            a.residual.ptr<TA>(), a.residual.strides[0], partials, M * D,
                            a.bias.defined() ? a.bias.ptr<TA>() : nullptr, a.norm_weight.ptr<TA>(), int(D), a.eps,
                            a.weight_offset);
      };
      auto with_s = [&](auto nvt_tag) {
        switch (splits) {
          case 2: go(std::integral_constant<int, 2>{}, nvt_tag); break;
          case 3: go(std::integral_constant<int, 3>{}, nvt_tag); break;
          default: go(std::integral_constant<int, 4>{}, nvt_tag); break;
        }
      };
      if (nvt <= 1) with_s(std::integral_constant<int, 1>{});
      else if (nvt <= 2) with_s(std::integral_constant<int, 2>{});
      else with_s(std::integral_constant<int, 4>{});
    }
  });
  check_launch("split_k_add_rms_norm");
}

}  // namespace portllm::gpu
