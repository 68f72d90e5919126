// MOE_GEMM with block-FP8 weights on FP8 tensor cores (W8A8, the scheme vLLM and SGLang use for
// DeepSeek's 128x128-block checkpoints): NVIDIA sm_89+ only (mma.sync m16n8k32 with e4m3
// operands), ARCHITECTURE.md rule 4. Its siblings, which dequantize the weights instead, are
// gpu.moe_gemm_mma (NVIDIA) and the portable gpu.moe_gemm_tiled; what this kernel does not take at
// run time goes to the next MOE_GEMM kernel by priority.
//
// Why: gpu.moe_gemm_mma decodes every e4m3 weight to bf16 in registers before its MMA. ncu on
// DeepSeek-V2-Lite's gate_up at 64 tokens put that decode at ~3.5x the bf16 kernel's instructions
// per weight byte (BENCHMARKS.md, twenty-sixth session): the fp8 tile streamed 2.41 TB/s against
// bf16's 3.78, and FP8 serving ran at 64% of bf16's rate. Here the weights' bytes go to the tensor
// cores as stored; the activations are quantized once per call instead.
//
//   1. x [R, K] -> e4m3 codes and one f32 scale per row and 128-wide k group (fp8_quant.cu, the
//      dense W8A8 GEMM's quantizer), into stream-ordered scratch.
//   2. Per block tile BM x 128 outputs and per 128-wide k step (one activation group and one weight
//      block column): the MMAs of the step run on the raw codes into an f32 partial sum, which is
//      scaled by x's group scale (per row) times W's block scale (per tile: block_n is a multiple of
//      128, or one block over N) and added into the f32 accumulator. The partial sums never cross
//      a scale boundary, so the only errors are the activations' e4m3 rounding (relative 2^-4 per
//      value at worst), the tensor cores' accumulation over 128 products and the final rounding.
//
// Tile walk and row ownership as gpu.moe_gemm_mma (grouped_tile_scan: blockIdx.y a row tile of one
// expert, blockIdx.x a 128-column tile; blocks past the real tiles exit; no host sync, capturable).
// Tiles global -> shared by 16-byte cp.async in a STAGES-deep ring, rows of 128 bytes (one k step)
// whose 16-byte chunk c is stored at chunk c ^ (row & 7), rows past the expert's end or past N
// zero-filled. K is permuted within a step: the lane with lane % 4 == q feeds the 16 logical k of
// its A and B registers (4 MMAs of k 32) from the 32 contiguous bytes q*32 .. q*32+31 of its row, in
// x and W alike (the dot product does not care about the order), so each lane reads its fragments
// with two 16-byte loads per row, and the swizzle makes every quarter-warp's loads hit 8 distinct
// chunks (conflict-free).
//
// Two tile shapes from the host-known rows per expert (R / E):
//   small  (<= 16: decode batches the GEMV hands over)  16 x 128, 4 warps of 16 x 32, 4 stages,
//          141 registers, 3 blocks per SM;
//   medium (more: mixed and prefill steps)              64 x 128, 4 warps of 32 x 64, 4 stages,
//          255 registers, 2 blocks per SM.
// A 128 x 128 tile of 8 such warps (3 stages, one block per SM) was slower than the medium one at
// every size (DeepSeek-V2-Lite's gate_up at 4096 tokens: 1517 against 1369 us; BENCHMARKS.md,
// twenty-seventh session). PORTLLM_MOE_W8A8=0 turns the kernel off (to compare against the
// dequantizing kernels); PORTLLM_MOE_W8A8_TILE=small|medium forces a shape.
#include <algorithm>
#include <type_traits>

#include "backends/gpu/env_switch.h"
#include "backends/gpu/fp8_quant.h"
#include "backends/gpu/grouped_gemm.h"
#include "backends/gpu/grouped_tile.cuh"
#include "backends/gpu/kernel_common.cuh"
#include "ops/op_args_moe.h"
#include "ops/registry.h"
#if !defined(PORTLLM_GPU_MUSA)
#include "backends/gpu/mma_sm80.cuh"
#endif

namespace portllm::gpu {

#if defined(PORTLLM_GPU_MUSA)
void register_moe_gemm_w8a8_kernels() {}  // NVIDIA-only fast path; MUSA dequantizes (gpu.moe_gemm_tiled)
#else
namespace {
using namespace sm80;
constexpr const char* kName = "gpu.moe_gemm_w8a8_mma";
constexpr int kPriority = 27;  // above gpu.moe_gemm_mma (25), below the decode GEMV (30)
constexpr int kBK = kFp8QuantGroup;  // one activation group (and one weight block) per k step
constexpr int kBN = 128;
static_assert(kBK == 128, "a k step is one 128-byte row of codes: 8 chunks, 4 lanes x 32 bytes");
static_assert(kWarpSize == 32, "the mma kernel assumes 32-thread warps (NVIDIA)");

template <int BM_, int WM_, int WN_, int STAGES_>
struct Cfg {
  static constexpr int BM = BM_, WM = WM_, WN = WN_, STAGES = STAGES_;
  static constexpr int kThreads = WM * WN * 32;
  static constexpr int MT = BM / WM / 16;   // 16-row MMA tiles per warp
  static constexpr int NT = kBN / WN / 8;   // 8-column MMA tiles per warp
  static constexpr int kStage = (BM + kBN) * kBK;  // x codes, then W codes
  static constexpr size_t kSmem = kDynSmemAlign + size_t(STAGES) * kStage;
  static_assert(MT >= 1 && MT <= 2 && NT >= 1 && STAGES >= 2, "tile shape");
};
using Small = Cfg<16, 1, 4, 4>;
using Medium = Cfg<64, 2, 2, 4>;
constexpr int64_t kSmallRows = 16;  // rows per expert up to which the small tile is taken

// c (+)= a b over 32 k of e4m3 codes, f32 accumulation; kZero: c = a b.
template <bool kZero>
__device__ __forceinline__ void mma_e4m3(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (kZero) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%10,%10,%10};\n"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.f));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#endif
}

// The kernel's view of one call: the grouped-GEMM parameters with x replaced by its codes.
struct W8A8Params {
  GroupedGemmParams g;   // out, W, scales, rows, N, K, expert_offsets (g.x unused)
  const uint8_t* xq;     // [rows, K] e4m3, row stride K
  const float* xs;       // [K / 128, rows]: xs[kb * rows + r]
};

// The 32 bytes lane q of a quad reads from row `row` of a [*, 128]-byte swizzled tile.
__device__ __forceinline__ void load_row32(const uint8_t* tile, int row, int q, uint32_t (&v)[8]) {
  const uint8_t* r = tile + row * kBK;
  const uint4 lo = *reinterpret_cast<const uint4*>(r + (((2 * q) ^ (row & 7)) * 16));
  const uint4 hi = *reinterpret_cast<const uint4*>(r + (((2 * q + 1) ^ (row & 7)) * 16));
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}

template <class C, class TX>
__global__ void __launch_bounds__(C::kThreads, 2) moe_gemm_w8a8_kernel(W8A8Params wp) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  const GroupedGemmParams& p = wp.g;
  constexpr int BM = C::BM, T = C::kThreads, ST = C::STAGES, MT = C::MT, NT = C::NT;
  constexpr int kChunks = kBK / 16;                                // 16-byte chunks per tile row
  constexpr int AJ = (BM * kChunks + T - 1) / T, WJ = kBN * kChunks / T;  // copies per thread and stage
  static_assert(WJ * T == kBN * kChunks, "W copy split");

  __shared__ int scan[T + 2];
  extern __shared__ __align__(16) unsigned char smem_base[];
  uint8_t* const smem = smem_base + dyn_smem_pad(smem_base);
  int e;
  int64_t r0, r1;
  if (!grouped_tile_scan<BM>(p, scan, int(blockIdx.y), e, r0, r1) || r1 <= r0) return;  // whole block
  const int row0 = int(r0), rows = int(r1 - r0);

  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32, g = lane / 4, q = lane % 4;
  const int n0 = int(blockIdx.x) * kBN, N = int(p.N), K = int(p.K), R = int(p.rows);
  const int nk = K / kBK;
  const uint8_t* w = static_cast<const uint8_t*>(p.w) + int64_t(e) * p.w_es;

  // Copies: thread tid copies chunk tid % 8 of tile rows tid / 8 + j T / 8 at every stage; only k
  // advances. T / 8 is a multiple of 8, so a thread's rows share one swizzle (row & 7) and their
  // sources and destinations are one base plus j strides. Invalid rows copy nothing (src-size 0:
  // zeros; the source then is the tensor's start, a valid address).
  static_assert((T / kChunks) % 8 == 0, "one swizzle per thread");
  constexpr int kRowStep = T / kChunks;
  const int cc = tid % kChunks, crow = tid / kChunks;
  const int cdst = crow * kBK + ((cc ^ (crow & 7)) * 16);
  const uint8_t* const xsrc = wp.xq + int64_t(row0 + crow) * K + cc * 16;
  const uint8_t* const wsrc = w + int64_t(n0 + crow) * p.w_ld + cc * 16;
  auto issue = [&](int ks, int st) {
    uint8_t* s = smem + st * C::kStage + cdst;
    const int k0 = ks * kBK;
#pragma unroll
    for (int j = 0; j < AJ; ++j) {
      const int r = crow + j * kRowStep;
      if (r < BM) cp_async16(s + j * kRowStep * kBK, r < rows ? xsrc + int64_t(j) * kRowStep * K + k0 : wp.xq, r < rows ? 16 : 0);
    }
#pragma unroll
    for (int j = 0; j < WJ; ++j) {
      const bool ok = n0 + crow + j * kRowStep < N;
      cp_async16(s + (BM + j * kRowStep) * kBK, ok ? wsrc + int64_t(j) * kRowStep * p.w_ld + k0 : w, ok ? 16 : 0);
    }
  };

  const int wm = warp / C::WN, wn = warp % C::WN;
  const int wrow = wm * (BM / C::WM), wcol = wn * (kBN / C::WN);
  const int mt_live = min(MT, max(0, (rows - wrow + 15) / 16));  // warp-uniform
  // This thread's accumulator rows (wrow + 16 t + g + 8 h), clamped into x for the scale loads:
  // rows past the tile are computed from zeros and not stored.
  int srow[MT][2];
#pragma unroll
  for (int t = 0; t < MT; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) srow[t][h] = min(row0 + min(wrow + 16 * t + g + 8 * h, rows - 1), R - 1);
  // W's block scales: one per k step for the whole tile (block_n a multiple of 128 or >= N).
  const float* wsc = p.scale + int64_t(e) * p.s_es + int64_t(n0 / p.block_n) * p.s_s0;
  const int steps_per_wblock = p.block_k / kBK;

  float acc[MT][NT][4] = {};

#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < nk) issue(s, s);
    cp_async_commit();
  }
  for (int ks = 0; ks < nk; ++ks) {
    // Scales first: their loads' latency hides behind the wait and the barrier.
    const float sw = __ldg(wsc + int64_t(ks / steps_per_wblock) * p.s_s1);
    float f[MT][2];
#pragma unroll
    for (int t = 0; t < MT; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h) f[t][h] = sw * __ldg(wp.xs + int64_t(ks) * R + srow[t][h]);
    cp_async_wait<ST - 2>();  // this thread's copies of step ks have landed
    __syncthreads();          // everyone's have; every warp is done with step ks - 1's stage
    {
      const int kn = ks + ST - 1;
      if (kn < nk) issue(kn, kn % ST);
      cp_async_commit();  // possibly empty: keeps the group count in step with ks
    }
    if (mt_live == 0) continue;  // this warp's rows are all past the tile's (it still copies)
    const uint8_t* sa = smem + (ks % ST) * C::kStage;
    const uint8_t* sb = sa + BM * kBK;
    // ML live row tiles as a constant, so that the step is one straight block to schedule.
    auto step = [&](auto live) {
      constexpr int ML = decltype(live)::value;
      uint32_t af[ML][2][8];
#pragma unroll
      for (int t = 0; t < ML; ++t)
#pragma unroll
        for (int h = 0; h < 2; ++h) load_row32(sa, wrow + 16 * t + g + 8 * h, q, af[t][h]);
#pragma unroll
      for (int i = 0; i < NT; ++i) {
        uint32_t b[8];
        load_row32(sb, wcol + 8 * i + g, q, b);
        float part[ML][4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int t = 0; t < ML; ++t) {
            // MMA j's logical k 4q..4q+3 (a0, a1, b0) and 16+4q.. (a2, a3, b1) are this lane's
            // bytes 8j..8j+3 and 8j+4..8j+7.
            const uint32_t a[4] = {af[t][0][2 * j], af[t][1][2 * j], af[t][0][2 * j + 1], af[t][1][2 * j + 1]};
            if (j == 0) mma_e4m3<true>(part[t], a, b[2 * j], b[2 * j + 1]);
            else mma_e4m3<false>(part[t], a, b[2 * j], b[2 * j + 1]);
          }
#pragma unroll
        for (int t = 0; t < ML; ++t) {
          acc[t][i][0] = fmaf(f[t][0], part[t][0], acc[t][i][0]);
          acc[t][i][1] = fmaf(f[t][0], part[t][1], acc[t][i][1]);
          acc[t][i][2] = fmaf(f[t][1], part[t][2], acc[t][i][2]);
          acc[t][i][3] = fmaf(f[t][1], part[t][3], acc[t][i][3]);
        }
      }
    };
    if (mt_live == MT) step(std::integral_constant<int, MT>{});
    else step(std::integral_constant<int, 1>{});
  }

  TX* out = static_cast<TX*>(p.out);
#pragma unroll
  for (int t = 0; t < MT; ++t) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = wrow + 16 * t + g + 8 * h;
      if (r >= rows) continue;
      TX* orow = out + int64_t(row0 + r) * p.out_ld;
#pragma unroll
      for (int i = 0; i < NT; ++i) {
        const int n = n0 + wcol + 8 * i + 2 * q;
        if (n + 1 < N) *reinterpret_cast<uint32_t*>(orow + n) = Mma<TX>::pack(acc[t][i][2 * h], acc[t][i][2 * h + 1]);
        else if (n < N) orow[n] = cvt<TX>(acc[t][i][2 * h]);
      }
    }
  }
#endif
}

template <class C>
int64_t row_tiles(const GroupedGemmParams& p) {
  return grouped_tile_bound(p.rows, p.num_experts, C::BM);
}

template <class C, class TX>
void launch_cfg(const W8A8Params& wp, gpuStream_t st) {
  // Per launch, like the other tensor-core kernels: the attribute belongs to the current device.
  (void)gpuFuncSetAttribute(moe_gemm_w8a8_kernel<C, TX>, gpuFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmem));
  const int64_t ntiles = (wp.g.N + kBN - 1) / kBN;
  moe_gemm_w8a8_kernel<C, TX><<<dim3(unsigned(ntiles), unsigned(row_tiles<C>(wp.g))), C::kThreads, C::kSmem, st>>>(wp);
  check_launch("moe_gemm_w8a8");
}

// What the kernel needs of a call's views and scales, beyond supports(): 16-byte rows of W, 4-byte
// output pairs, 128-aligned weight blocks, and grids within limits.
bool call_ok(const GroupedGemmParams& p) {
  if (!aligned16(p.w) || p.w_ld % 16 != 0 || p.w_es % 16 != 0) return false;
  if (reinterpret_cast<uintptr_t>(p.out) % 4 != 0 || p.out_ld % 2 != 0) return false;
  if (!p.scale || !p.expert_offsets || p.block_k % kBK != 0 || !(p.block_n >= p.N || p.block_n % kBN == 0))
    return false;
  if (p.rows * p.K >= (int64_t(1) << 31) || row_tiles<Small>(p) > 65535) return false;
  const int64_t sk = p.K / p.block_k, sn = (p.N + p.block_n - 1) / p.block_n;
  return (sn - 1) * p.s_s0 + sk * p.s_s1 < (int64_t(1) << 31) && p.rows * (p.K / kBK) < (int64_t(1) << 31);
}

void moe_gemm_w8a8(const MoeGemmArgs& a, Stream& s) {
  if (a.x.size(0) == 0 || a.w.size(0) == 0 || a.w.size(1) == 0) return;
  GroupedGemmParams p = moe_gemm_params(a);
  if (!call_ok(p)) return next_moe_gemm_kernel(a, s, kName, kPriority).run(&a, s);
  const int64_t R = p.rows, K = p.K;
  auto xq = scratch(s, size_t(R * K));
  auto xs = scratch(s, size_t(R * (K / kBK)) * sizeof(float));
  launch_fp8_quant_groups(p.x, p.x_t, p.x_ld, R, K, R, static_cast<uint8_t*>(xq.get()), static_cast<float*>(xs.get()),
                          s);
  W8A8Params wp{p, static_cast<const uint8_t*>(xq.get()), static_cast<const float*>(xs.get())};
  const int64_t per_expert = R / std::max(1, p.num_experts);
  const gpuStream_t st = native_stream(s);
  // PORTLLM_MOE_W8A8_TILE forces one tile shape (to measure them against each other).
  static const int forced = env_switch("PORTLLM_MOE_W8A8_TILE", {"auto", "small", "medium"}, 0);
  const bool small = forced ? forced == 1 : per_expert <= kSmallRows;
  auto launch = [&](auto tx) {
    using TX = decltype(tx);
    if (small) launch_cfg<Small, TX>(wp, st);
    else launch_cfg<Medium, TX>(wp, st);
  };
  if (p.x_t == DType::BF16) launch(gpu_bf16{});
  else launch(gpu_half{});
}

bool supports(const OpDesc& d, const DeviceCaps& c) {
  static const bool on = env_switch("PORTLLM_MOE_W8A8", {"1", "0"}, 0) == 0;
  if (!on || d.flags != 0) return false;  // no gather mode (moe_gemv.cu has it)
  if (c.vendor != "nvidia" || c.arch < 89 || !c.fp8) return false;
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  if ((x != DType::BF16 && x != DType::F16) || o != x || w != DType::F8E4M3) return false;
  if (x == DType::BF16 && !c.bf16_matmul) return false;
  const int64_t N = d.dim[1], K = d.dim[2], block_k = d.dim[3];
  if (K <= 0 || K % kBK != 0 || block_k <= 0 || block_k % kBK != 0) return false;
  if (N >= (int64_t(1) << 31) || K >= (int64_t(1) << 31)) return false;
  const size_t smem = std::max(Small::kSmem, Medium::kSmem);
  return smem <= std::max(c.shared_mem_per_block_optin, c.shared_mem_per_block);
}
}  // namespace

void register_moe_gemm_w8a8_kernels() {
  // e4m3 activations: as the dense W8A8 GEMM (matmul_fp8_w8a8.cpp), ~0.025 normalized error on the
  // conformance cases' uniform data, so the same 4e-2 floor.
  register_kernel<MoeGemmArgs>(Op::MOE_GEMM, DeviceKind::CUDA, kName, kPriority, supports, moe_gemm_w8a8, 4e-2);
}
#endif

}  // namespace portllm::gpu
