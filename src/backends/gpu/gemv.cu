// MATMUL for decode-sized batches (M <= 8 rows): out[M, N] = x[M, K] @ W[N, K]^T (+ bias), bf16 or
// f16 x and W, f32 accumulation, any float output (the LM head writes f32 logits).
//
// At M <= 8 a GEMM is a stream over W: every weight byte is used M times, so the kernel is
// bandwidth-bound and the goal is to keep enough bytes in flight. Each warp owns kRows output
// columns (rows of W); lane l reads 16-byte vectors (8 values) of each row at k = 8 l + 256 i,
// kUnroll vectors per row in flight, and the matching x vectors (x is tiny and stays in L1).
// A warp reduction per (m, n) finishes the dot products. Portable CUDA C++ (plain 16-byte loads);
// vendor BLAS takes shapes this kernel refuses (K % 8 != 0, unaligned rows, M > 8, f32).
#include <algorithm>

#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kRows = 2;    // W rows per warp
// 16-byte vectors per row in flight per lane. 4 on W of at most 16384 rows measured worse on the
// H200: Qwen3-8B down_proj (4096 x 12288) 37.2 us against ~30 us at 2 (decode TPOT 5.34 vs 5.22 ms).
constexpr int kUnroll = 2;
constexpr int kMaxM = 8;

template <class T, class TO, int M>
__global__ void __launch_bounds__(kThreads) gemv_kernel(TO* out, int64_t out_ld, const T* __restrict__ x, int64_t x_ld,
                                                        const T* __restrict__ w, int64_t w_ld, const void* bias,
                                                        DType bias_t, int m_rows, int64_t N, int64_t K) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int64_t n0 = (int64_t(blockIdx.x) * kWarps + warp) * kRows;
  if (n0 >= N) return;
  float acc[M][kRows];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[m][r] = 0.f;
  const T* wr[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) wr[r] = w + std::min<int64_t>(n0 + r, N - 1) * w_ld;  // clamp: rows past N are not stored
  constexpr int kStep = kWarpSize * 8;
  for (int64_t k0 = int64_t(lane) * 8; k0 < K; k0 += int64_t(kStep) * kUnroll) {
    uint4 wv[kUnroll][kRows];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = k0 + int64_t(u) * kStep;
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        wv[u][r] = k < K ? *reinterpret_cast<const uint4*>(wr[r] + k) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = k0 + int64_t(u) * kStep;
      if (k >= K) break;
      float wf[kRows][8];
#pragma unroll
      for (int r = 0; r < kRows; ++r) unpack8<T>(wv[u][r], wf[r]);
#pragma unroll
      for (int m = 0; m < M; ++m) {
        if (m >= m_rows) break;
        float xf[8];
        unpack8<T>(*reinterpret_cast<const uint4*>(x + int64_t(m) * x_ld + k), xf);
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[m][r] += xf[i] * wf[r][i];
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) {
    if (m >= m_rows) break;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float v = warp_sum(acc[m][r]);
      const int64_t n = n0 + r;
      if (lane == 0 && n < N) {
        float b = 0.f;
        if (bias) {
          if (bias_t == DType::F32) b = static_cast<const float*>(bias)[n];
          else if (bias_t == DType::BF16) b = gpu_bf16_to_f32(static_cast<const gpu_bf16*>(bias)[n]);
          else b = gpu_half_to_f32(static_cast<const gpu_half*>(bias)[n]);
        }
        out[int64_t(m) * out_ld + n] = cvt<TO>(v + b);
      }
    }
  }
}

// The output is rounded once from f32 (bias added in f32), as the BLAS path with beta = 1 does
// for an f32 output; for bf16/f16 outputs the BLAS path rounds the bias first, a difference far
// below the bf16 tolerance of the conformance suite.
template <class T, int M>
void launch(const MatmulArgs& a, gpuStream_t st) {
  const int64_t N = a.w.size(0), K = a.w.size(1);
  const unsigned grid = unsigned((N + kWarps * kRows - 1) / (kWarps * kRows));
  dispatch_float(a.out.dtype, [&](auto to) {
    using TO = typename decltype(to)::type;
    gemv_kernel<T, TO, M><<<grid, kThreads, 0, st>>>(a.out.ptr<TO>(), a.out.strides[0], static_cast<const T*>(a.x.data),
                                                     a.x.strides[0], static_cast<const T*>(a.w.data), a.w.strides[0],
                                                     a.bias.defined() ? a.bias.data : nullptr,
                                                     a.bias.defined() ? a.bias.dtype : DType::F32, int(a.x.size(0)), N, K);
  });
}

// The BLAS kernel this one defers to when a view's alignment rules out 16-byte loads.
const KernelInfo* blas_fallback() {
  static const KernelInfo* k = KernelRegistry::instance().find("gpu.matmul_blas");
  return k;
}

void gemv(const MatmulArgs& a, Stream& s) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  if (M == 0 || N == 0) return;
  const bool ok = aligned16(a.x.data) && aligned16(a.w.data) && a.x.strides[0] % 8 == 0 && a.w.strides[0] % 8 == 0 &&
                  K % 8 == 0;
  if (!ok) return blas_fallback()->run(&a, s);
  const gpuStream_t st = native_stream(s);
  auto go = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (M == 1) launch<T, 1>(a, st);
    else if (M == 2) launch<T, 2>(a, st);
    else if (M <= 4) launch<T, 4>(a, st);
    else launch<T, 8>(a, st);
  };
  if (a.x.dtype == DType::BF16) go(Tag<gpu_bf16>{});
  else go(Tag<gpu_half>{});
  check_launch("gemv");
}

// On NVIDIA only M = 1: from M = 2 cuBLAS streams W at ~4 TB/s too and this kernel loses (H200,
// Qwen3-8B gate_up N=24576 K=4096: M=1 47.6 vs 49.6 us, M=2 59 vs 50, M=4 77 vs 50, M=8 133 vs
// 55; `portllm ops perf -b cuda -o MATMUL --dtypes bf16`). Elsewhere up to kMaxM rows, until the
// vendor BLAS is measured at these sizes.
bool supports(const OpDesc& d, const DeviceCaps& c) {
  const DType x = d.dtype[0], w = d.dtype[1];
  const int64_t max_m = c.vendor == "nvidia" ? 1 : kMaxM;
  return x == w && (x == DType::BF16 || x == DType::F16) && d.dim[0] >= 1 && d.dim[0] <= max_m &&
         d.dim[2] % 8 == 0;
}
}  // namespace

void register_gemv_kernels() {
  register_kernel<MatmulArgs>(Op::MATMUL, kKind, "gpu.gemv_small_m", 20, supports, gemv);
}

}  // namespace portllm::gpu
