// MOE_GEMM on NVIDIA tensor cores (nvcuda::wmma, sm_80+): the NVIDIA-only fast sibling of the
// portable tiled kernel in moe_gemm.cu (ARCHITECTURE.md rule 4), for bf16/f16 activations with
// weights of the same dtype or f8_e4m3 blocks (decoded, scaled and rounded to the activation
// dtype while the tile is stored to shared memory). Same tile walk as the portable kernel
// (grouped_tile.cuh): a block owns up to 64 rows of one expert and 64 output columns; 4 warps,
// each 32x32 outputs as 2x2 16x16x16 fragments with f32 accumulators; K slices of 32 are
// prefetched into registers while the previous slice is multiplied. MUSA builds register nothing.
#include <type_traits>

#include "backends/gpu/fp8.cuh"
#include "backends/gpu/grouped_gemm.h"
#include "backends/gpu/grouped_tile.cuh"
#include "backends/gpu/kernel_common.cuh"
#include "ops/op_args_moe.h"
#include "ops/registry.h"

#if !defined(PORTLLM_GPU_MUSA)
#include <mma.h>
#endif

namespace portllm::gpu {

#if defined(PORTLLM_GPU_MUSA)
void register_moe_gemm_wmma_kernels() {}
#else
namespace {
constexpr int kBM = 64, kBN = 64, kBK = 32;
constexpr int kLds = kBK + 8;  // shared row stride of the x / W tiles (elements): 80 bytes
constexpr int kLdc = kBN + 4;  // shared row stride of the f32 output tile
constexpr int kThreads = 128;  // 4 warps in a 2 x 2 grid of 32 x 32 outputs
static_assert(kWarpSize == 32, "the wmma kernel assumes 32-thread warps (NVIDIA)");

template <class TX, class TW>
__global__ void __launch_bounds__(kThreads) moe_gemm_wmma_kernel(GroupedGemmParams p, const int32_t* tile_start) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  constexpr bool kFp8 = std::is_same_v<TW, uint8_t>;
  // wmma loads/stores need 32-byte aligned addresses: every fragment starts at a row multiple of
  // 16 (16 * 80 B and 16 * 272 B are multiples of 32) and a column offset of 0 or 16 elements.
  __shared__ __align__(32) TX As[kBM][kLds];
  __shared__ __align__(32) TX Bs[kBN][kLds];
  __shared__ __align__(32) float Cs[kBM][kLdc];

  int e;
  int64_t row0, row_end;
  if (!grouped_tile<kBM>(p, tile_start, e, row0, row_end)) return;  // whole block
  const int tid = int(threadIdx.x), warp = tid / kWarpSize, wm = warp / 2, wn = warp % 2;
  const int64_t n0 = int64_t(blockIdx.y) * kBN, N = p.N, K = p.K;
  const TX* x = static_cast<const TX*>(p.x);
  const TW* w = static_cast<const TW*>(p.w) + int64_t(e) * p.w_es;
  const float* sc = kFp8 ? p.scale + int64_t(e) * p.s_es : nullptr;

  // Loads: thread tid owns k = lk of each slice and tile rows / columns lr + i * kStep.
  constexpr int kStep = kThreads / kBK, A_PER = kBM / kStep, B_PER = kBN / kStep;
  const int lk = tid % kBK, lr = tid / kBK;
  TX ra[A_PER], rb[B_PER];
  const TX zero = cvt<TX>(0.f);
  auto load = [&](int64_t k0) {
    const int64_t k = k0 + lk;
    const bool kin = k < K;
#pragma unroll
    for (int i = 0; i < A_PER; ++i) {
      const int64_t r = row0 + lr + i * kStep;
      ra[i] = (kin && r < row_end) ? x[r * p.x_ld + k] : zero;
    }
    const float* scol = nullptr;
    if constexpr (kFp8) scol = sc + int64_t(int(k) / p.block_k) * p.s_s1;
#pragma unroll
    for (int i = 0; i < B_PER; ++i) {
      const int64_t gn = n0 + lr + i * kStep;
      if (kin && gn < N) {
        if constexpr (kFp8)
          rb[i] = cvt<TX>(f8e4m3_to_f32(w[gn * p.w_ld + k]) * scol[int64_t(int(gn) / p.block_n) * p.s_s0]);
        else
          rb[i] = w[gn * p.w_ld + k];
      } else {
        rb[i] = zero;
      }
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  load(0);
  for (int64_t k0 = 0; k0 < K; k0 += kBK) {
#pragma unroll
    for (int i = 0; i < A_PER; ++i) As[lr + i * kStep][lk] = ra[i];
#pragma unroll
    for (int i = 0; i < B_PER; ++i) Bs[lr + i * kStep][lk] = rb[i];
    __syncthreads();
    if (k0 + kBK < K) load(k0 + kBK);  // next slice in flight during the MMAs
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      // A = x tile (row-major, [m][k]); B(k, n) = W[n][k], i.e. the W tile read column-major.
      wmma::fragment<wmma::matrix_a, 16, 16, 16, TX, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, TX, wmma::col_major> b[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &As[wm * 32 + i * 16][kk], kLds);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &Bs[wn * 32 + j * 16][kk], kLds);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // before the next slice overwrites As/Bs
  }

#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&Cs[wm * 32 + i * 16][wn * 32 + j * 16], acc[i][j], kLdc, wmma::mem_row_major);
  __syncthreads();
  TX* out = static_cast<TX*>(p.out);
  for (int idx = tid; idx < kBM * kBN; idx += kThreads) {
    const int m = idx / kBN, n = idx % kBN;
    const int64_t r = row0 + m, gn = n0 + n;
    if (r < row_end && gn < N) out[r * p.out_ld + gn] = cvt<TX>(Cs[m][n]);
  }
#endif
}

template <class TX, class TW>
void launch(const GroupedGemmParams& p, Stream& s) {
  const int64_t tiles = grouped_tile_bound(p.rows, p.num_experts, kBM), ntiles = (p.N + kBN - 1) / kBN;
  if (tiles <= 0 || ntiles <= 0) return;
  if (tiles > 0x7fffffff || ntiles > 65535) fail("moe_gemm_wmma: problem too large for the grid");
  auto ts = launch_tile_start(p.expert_offsets, p.num_experts, kBM, s);
  moe_gemm_wmma_kernel<TX, TW><<<dim3(unsigned(tiles), unsigned(ntiles)), kThreads, 0, native_stream(s)>>>(
      p, static_cast<const int32_t*>(ts.get()));
  check_launch("moe_gemm_wmma");
}

void moe_gemm_wmma(const MoeGemmArgs& a, Stream& s) {
  if (a.x.size(0) == 0 || a.w.size(0) == 0 || a.w.size(1) == 0) return;
  const GroupedGemmParams p = moe_gemm_params(a);
  if (p.out_t != p.x_t) fail("moe_gemm_wmma: output dtype must be the activation dtype");
  const bool fp8 = p.w_t == DType::F8E4M3;
  if (p.x_t == DType::BF16) {
    if (fp8) launch<gpu_bf16, uint8_t>(p, s);
    else if (p.w_t == DType::BF16) launch<gpu_bf16, gpu_bf16>(p, s);
    else fail("moe_gemm_wmma: weights must be bf16 or fp8");
  } else if (p.x_t == DType::F16) {
    if (fp8) launch<gpu_half, uint8_t>(p, s);
    else if (p.w_t == DType::F16) launch<gpu_half, gpu_half>(p, s);
    else fail("moe_gemm_wmma: weights must be f16 or fp8");
  } else {
    fail("moe_gemm_wmma: activations must be bf16 or f16");
  }
}

bool wmma_supports(const OpDesc& d, const DeviceCaps& c) {
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  return d.flags == 0 /* no gather mode */ && c.bf16_matmul && c.arch >= 80 && (x == DType::BF16 || x == DType::F16) && o == x &&
         (w == x || w == DType::F8E4M3) && d.dim[1] < (int64_t(1) << 31) && d.dim[2] < (int64_t(1) << 31);
}
}  // namespace

void register_moe_gemm_wmma_kernels() {
  register_kernel<MoeGemmArgs>(Op::MOE_GEMM, DeviceKind::CUDA, "gpu.moe_gemm_wmma", 20, wmma_supports, moe_gemm_wmma);
}
#endif

}  // namespace portllm::gpu
