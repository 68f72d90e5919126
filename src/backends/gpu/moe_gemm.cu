// MOE_GEMM: the grouped GEMM over rows grouped by expert (out[r] = x[r] @ W[e(r)]^T), with
// f32/bf16/f16 weights or f8_e4m3 weights dequantized by their block scale while a tile is
// loaded. The same tiled kernel serves MATMUL_FP8_BLOCK's small-M path (one group, optional bias;
// matmul_fp8.cpp). Portable CUDA C++ (no wmma/mma/PTX), f32 accumulation.
//
// The expert segment offsets stay on the device: a one-block kernel turns them into a prefix sum
// of row tiles per expert (tile_start), and each GEMM block binary-searches its tile there. The
// host launches an upper bound of tiles (sum_e ceil(rows_e / BM) <= min(R, (R + E (BM-1)) / BM));
// blocks past the real count exit. A tile never straddles two experts, whatever `align` was.
//
// Tiles: BM x BN outputs per block of 256 threads, BK = 32 deep, each thread TM x TN outputs in
// registers. The next K slice is loaded into registers while the current one is multiplied from
// shared memory, so the weight stream stays in flight. Decode-sized groups (few rows per expert)
// use BM = 16 so a tile reads each weight element once for the few rows it has.
#include <algorithm>
#include <type_traits>

#include "backends/gpu/fp8.cuh"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/grouped_gemm.h"
#include "backends/gpu/grouped_tile.cuh"
#include "backends/gpu/kernel_common.cuh"
#include "ops/op_args_moe.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;

constexpr int kBK = 32;

__device__ __forceinline__ float ldw(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ldw(const gpu_bf16* p, int64_t i) { return gpu_bf16_to_f32(p[i]); }
__device__ __forceinline__ float ldw(const gpu_half* p, int64_t i) { return gpu_half_to_f32(p[i]); }
__device__ __forceinline__ float ldw(const uint8_t* p, int64_t i) { return f8e4m3_to_f32(p[i]); }


// tile_start[0] = 0, tile_start[e + 1] = sum over e' <= e of ceil(rows of e' / bm). One block.
__global__ void tile_start_kernel(const int32_t* off, int E, int bm, int32_t* ts) {
  __shared__ int sm[1024];
  if (threadIdx.x == 0) ts[0] = 0;
  scan_expert_tiles(off, E, bm, sm, [&](int e, int, int end) { ts[e + 1] = end; });
}

template <class TX, class TW, class TO, int BM, int BN, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 2)
    grouped_gemm_kernel(GroupedGemmParams p, const int32_t* tile_start) {
  constexpr int NT = (BM / TM) * (BN / TN);  // threads
  constexpr int TXN = BN / TN;               // threads along N
  constexpr int A_PER = BM * kBK / NT, B_PER = BN * kBK / NT;
  static_assert(BM * kBK % NT == 0 && BN * kBK % NT == 0, "tile loads must split evenly");
  constexpr bool kFp8 = std::is_same_v<TW, uint8_t>;
  __shared__ float As[kBK][BM + 1];  // +1: conflict-free transposed stores
  __shared__ float Bs[kBK][BN + 1];

  const int tid = int(threadIdx.x), tx = tid % TXN, ty = tid / TXN;
  int e;
  int64_t row0, row_end;
  if (!grouped_tile<BM>(p, tile_start, e, row0, row_end)) return;  // whole block: past the real tile count
  const int64_t n0 = int64_t(blockIdx.y) * BN;
  const int64_t N = p.N, K = p.K;
  const TX* x = static_cast<const TX*>(p.x);
  const TW* w = static_cast<const TW*>(p.w) + int64_t(e) * p.w_es;
  const float* sc = kFp8 ? p.scale + int64_t(e) * p.s_es : nullptr;

  // Loads: thread tid owns k = lk of each slice and tile rows (A) / columns (B) lr + i * kStep.
  static_assert(NT % kBK == 0, "threads must cover whole slice rows");
  constexpr int kStep = NT / kBK;
  const int lk = tid % kBK, lr = tid / kBK;
  float ra[A_PER], rb[B_PER];
  // Global -> registers for the K slice starting at k0 (zeros outside the matrix / tile rows).
  auto load = [&](int64_t k0) {
    const int64_t k = k0 + lk;
    const bool kin = k < K;
#pragma unroll
    for (int i = 0; i < A_PER; ++i) {
      const int64_t r = row0 + lr + i * kStep;
      ra[i] = (kin && r < row_end) ? ld(x, r * p.x_ld + k) : 0.f;
    }
    const float* scol = nullptr;
    if constexpr (kFp8) scol = sc + int64_t(int(k) / p.block_k) * p.s_s1;
#pragma unroll
    for (int i = 0; i < B_PER; ++i) {
      const int64_t gn = n0 + lr + i * kStep;
      float v = 0.f;
      if (kin && gn < N) {
        v = ldw(w, gn * p.w_ld + k);
        if constexpr (kFp8) v *= scol[int64_t(int(gn) / p.block_n) * p.s_s0];
      }
      rb[i] = v;
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  load(0);
  for (int64_t k0 = 0; k0 < K; k0 += kBK) {
#pragma unroll
    for (int i = 0; i < A_PER; ++i) As[lk][lr + i * kStep] = ra[i];
#pragma unroll
    for (int i = 0; i < B_PER; ++i) Bs[lk][lr + i * kStep] = rb[i];
    __syncthreads();
    if (k0 + kBK < K) load(k0 + kBK);  // next slice in flight while this one is multiplied
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[kk][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx + j * TXN];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // before the next slice overwrites As/Bs
  }

  TO* out = static_cast<TO*>(p.out);
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int64_t r = row0 + ty * TM + i;
    if (r >= row_end) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int64_t n = n0 + tx + j * TXN;
      if (n < N) out[r * p.out_ld + n] = cvt<TO>(acc[i][j] + (p.bias ? p.bias[n] : 0.f));
    }
  }
}

template <class TX, class TW, class TO, int BM, int BN, int TM, int TN>
void launch_tiles(const GroupedGemmParams& p, Stream& s) {
  const gpuStream_t st = native_stream(s);
  const int64_t R = p.rows;
  int64_t tiles;
  std::shared_ptr<void> ts;
  if (p.expert_offsets) {
    tiles = grouped_tile_bound(R, p.num_experts, BM);
    ts = launch_tile_start(p.expert_offsets, p.num_experts, BM, s);
  } else {
    tiles = (R + BM - 1) / BM;
  }
  const int64_t ntiles = (p.N + BN - 1) / BN;
  if (tiles <= 0 || ntiles <= 0) return;
  if (tiles > 0x7fffffff || ntiles > 65535) fail("grouped gemm: problem too large for the grid");
  grouped_gemm_kernel<TX, TW, TO, BM, BN, TM, TN><<<dim3(unsigned(tiles), unsigned(ntiles)), (BM / TM) * (BN / TN), 0, st>>>(
      p, static_cast<const int32_t*>(ts.get()));
  check_launch("grouped_gemm");
}

template <class TX, class TW, class TO>
void launch_typed(const GroupedGemmParams& p, Stream& s) {
  // Few rows per group (decode): 16-row tiles; otherwise 64 x 64.
  const bool small = p.expert_offsets ? p.rows < 32 * int64_t(p.num_experts) : p.rows <= 16;
  if (small)
    launch_tiles<TX, TW, TO, 16, 64, 1, 4>(p, s);
  else
    launch_tiles<TX, TW, TO, 64, 64, 4, 4>(p, s);
}

template <class Fn>
void dispatch_weight(DType t, Fn&& fn) {
  if (t == DType::F8E4M3) fn(Tag<uint8_t>{});
  else dispatch_float(t, fn);
}

// dst[n, k] = fp8 W[n, k] * scale(n, k), converted to TD, one element per thread: any shape or
// alignment (fp8_dequant16_kernel below takes the common ones).
template <class TD>
__global__ void fp8_dequant_kernel(TD* dst, int64_t dst_ld, const uint8_t* w, int64_t w_ld, const float* scale,
                                   int64_t s0, int64_t s1, int bn, int bk, int64_t N, int64_t K) {
  const int64_t total = N * K;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = i / K, k = i % K;
    const float v = f8e4m3_to_f32(w[n * w_ld + k]) * scale[int64_t(int(n) / bn) * s0 + int64_t(int(k) / bk) * s1];
    dst[n * dst_ld + k] = cvt<TD>(v);
  }
}

// The same, 16 consecutive k of a row per thread: one 16-byte load, one scale (the 16 lie in one
// scale block), sizeof(TD) 16-byte stores. The element-wise kernel moved a byte per thread with
// two 64-bit divisions: ~0.45 TB/s on the H200 (a DeepSeek-V2-Lite decode step at batch 64 spent
// 38 us per layer dequantizing the shared experts' 2048 x 2816 down projection; twenty-sixth
// session). Needs K, w_ld, dst_ld and block_k multiples of 16 and 16-byte aligned w and dst.
template <class TD>
__global__ void fp8_dequant16_kernel(TD* dst, int64_t dst_ld, const uint8_t* w, int64_t w_ld, const float* scale,
                                     int64_t s0, int64_t s1, int bn, int bk, int64_t N, int64_t K) {
  const int64_t per_row = K / 16, total = N * per_row;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = i / per_row, k = (i - n * per_row) * 16;
    const uint4 q = *reinterpret_cast<const uint4*>(w + n * w_ld + k);
    const float sc = scale[int64_t(int(n) / bn) * s0 + int64_t(int(k / bk)) * s1];
    const uint32_t words[4] = {q.x, q.y, q.z, q.w};
    alignas(16) TD o[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) o[j] = cvt<TD>(f8e4m3_to_f32(uint8_t(words[j / 4] >> (8 * (j % 4)))) * sc);
    uint4* d = reinterpret_cast<uint4*>(dst + n * dst_ld + k);
#pragma unroll
    for (int j = 0; j < int(sizeof(TD)); ++j) d[j] = reinterpret_cast<const uint4*>(o)[j];
  }
}

void moe_gemm(const MoeGemmArgs& a, Stream& s) {
  if (a.x.size(0) == 0 || a.w.size(0) == 0 || a.w.size(1) == 0) return;
  launch_grouped_gemm(moe_gemm_params(a), s);
}

bool moe_gemm_supports(const OpDesc& d, const DeviceCaps&) {
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  return d.flags == 0 /* no gather mode (moe_gemv.cu has it) */ && is_gpu_float(x) && o == x && (is_gpu_float(w) || w == DType::F8E4M3) && d.dim[1] < (int64_t(1) << 31) &&
         d.dim[2] < (int64_t(1) << 31);
}
}  // namespace

GroupedGemmParams moe_gemm_io_params(const MoeGemmArgs& a, const char* who) {
  GroupedGemmParams p;
  p.out = a.out.data;
  p.out_t = a.out.dtype;
  p.out_ld = a.out.strides[0];
  p.x = a.x.data;
  p.x_t = a.x.dtype;
  p.x_ld = a.x.strides[0];
  p.w_t = a.w.dtype;
  set_expert_weights(p, a.w, a.w_scale, a.block_n, a.block_k, who);
  p.N = a.w.size(1);
  p.K = a.w.size(2);
  p.num_experts = int(a.w.size(0));
  return p;
}

GroupedGemmParams moe_gemm_params(const MoeGemmArgs& a) {
  const int64_t E = a.w.size(0), N = a.w.size(1), K = a.w.size(2), R = a.x.size(0);
  if (a.x.size(1) != K || a.out.size(1) != N || a.out.size(0) != R || a.expert_offsets.numel() < E + 1)
    fail("moe_gemm: shapes of x [R, K], W [E, N, K], out [R, N], expert_offsets [E + 1] disagree");
  GroupedGemmParams p = moe_gemm_io_params(a, "moe_gemm");
  p.rows = R;
  p.expert_offsets = a.expert_offsets.ptr<int32_t>();
  return p;
}

void launch_grouped_gemm(const GroupedGemmParams& p, Stream& s) {
  if (p.w_t == DType::F8E4M3 && (!p.scale || p.block_n <= 0 || p.block_k <= 0))
    fail("grouped gemm: fp8 weights need scales and positive block sizes");
  dispatch_float(p.x_t, [&](auto tx) {
    using TX = typename decltype(tx)::type;
    dispatch_weight(p.w_t, [&](auto tw) {
      using TW = typename decltype(tw)::type;
      if (p.out_t == p.x_t) {
        launch_typed<TX, TW, TX>(p, s);
      } else if constexpr (std::is_same_v<TW, uint8_t> && !std::is_same_v<TX, float>) {
        if (p.out_t != DType::F32) fail("grouped gemm: output dtype must be the activation dtype or f32");
        launch_typed<TX, TW, float>(p, s);
      } else {
        fail("grouped gemm: output dtype must be the activation dtype");
      }
    });
  });
}

std::shared_ptr<void> launch_tile_start(const int32_t* expert_offsets, int num_experts, int bm, Stream& s) {
  auto ts = scratch(s, size_t(num_experts + 1) * sizeof(int32_t));
  tile_start_kernel<<<1, 1024, 0, native_stream(s)>>>(expert_offsets, num_experts, bm, static_cast<int32_t*>(ts.get()));
  check_launch("grouped gemm tile_start");
  return ts;
}

void launch_fp8_dequant(void* dst, DType dst_t, int64_t dst_ld, const void* w, int64_t w_ld, const float* scale,
                        int64_t s_s0, int64_t s_s1, int block_n, int block_k, int64_t N, int64_t K, Stream& s) {
  if (N * K == 0) return;
  if (block_n <= 0 || block_k <= 0) fail("fp8 dequant: block sizes must be positive");
  const bool by16 = K % 16 == 0 && w_ld % 16 == 0 && dst_ld % 16 == 0 && block_k % 16 == 0 &&
                    reinterpret_cast<uintptr_t>(w) % 16 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  dispatch_float(dst_t, [&](auto td) {
    using TD = typename decltype(td)::type;
    if (by16) {
      const unsigned grid = unsigned(std::min<int64_t>((N * (K / 16) + 255) / 256, 65535 * 8));
      fp8_dequant16_kernel<TD><<<grid, 256, 0, native_stream(s)>>>(static_cast<TD*>(dst), dst_ld,
                                                                  static_cast<const uint8_t*>(w), w_ld, scale, s_s0,
                                                                  s_s1, block_n, block_k, N, K);
      return;
    }
    const unsigned grid = unsigned(std::min<int64_t>((N * K + 255) / 256, 65535 * 8));
    fp8_dequant_kernel<TD><<<grid, 256, 0, native_stream(s)>>>(static_cast<TD*>(dst), dst_ld,
                                                              static_cast<const uint8_t*>(w), w_ld, scale, s_s0, s_s1,
                                                              block_n, block_k, N, K);
  });
  check_launch("fp8_dequant");
}

const KernelInfo& next_moe_gemm_kernel(const MoeGemmArgs& a, Stream& s, const char* name, int priority) {
  const OpDesc d = a.desc();
  for (const KernelInfo* k : KernelRegistry::instance().kernels(Op::MOE_GEMM, kKind))
    if (k->name != name && k->priority < priority && (!k->supports || k->supports(d, caps_of(s)))) return *k;
  fail((std::string(name) + ": no MOE_GEMM kernel to fall back to").c_str());
}

void register_moe_gemm_kernels() {
  register_kernel<MoeGemmArgs>(Op::MOE_GEMM, kKind, "gpu.moe_gemm_tiled", 10, moe_gemm_supports, moe_gemm);
  register_moe_gemm_wmma_kernels();
  register_moe_gemm_mma_kernels();
  register_moe_gemm_w8a8_kernels();
  register_moe_gemv_kernels();
}

}  // namespace portllm::gpu
