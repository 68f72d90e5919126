// MATMUL for decode-sized batches (M <= 8 rows): out[M, N] = x[M, K] @ W[N, K]^T (+ bias), bf16 or
// f16 x and W, f32 accumulation, any float output (the LM head writes f32 logits).
//
// At M <= 8 a GEMM is a stream over W: every weight byte is used M times, so the kernel is
// bandwidth-bound and the goal is to keep enough bytes in flight. Each warp owns kRows output
// columns (rows of W) and one of `split` slices of K; lane l reads 16-byte vectors (8 values) of
// each row at k = slice start + 8 l + 256 i, kUnroll vectors per row in flight, and the matching x
// vectors (x is tiny and stays in L1). A warp reduction per (m, n) finishes its slice's dot
// products; with split > 1 the block's warps that share rows add their slices through shared
// memory in slice order (deterministic). Narrow W (few rows, long K: Qwen3-8B's down_proj is 4096 x
// 12288) gets split > 1 so that enough warps stream at once: one warp per row pair gave 256 blocks,
// ~16 warps per SM and 3.4 TB/s. Portable CUDA C++ (plain 16-byte loads); vendor BLAS takes shapes
// this kernel refuses (K % 8 != 0, unaligned rows, M > 8, f32).
//
// MATMUL_SILU_MUL (kGated) is the same stream with a warp's two rows being gate row j and up row
// j + I of the merged gate_up weight, and silu(gate) * up as the epilogue: the SILU_MUL launch of a
// decode step disappears. Both products are rounded to the activation dtype first, as MATMUL's
// output would be before SILU_MUL reads it.
//
// MATMUL_ADD_RMS_NORM (Form::AddNorm, NVIDIA builds) is the same stream with each output added
// into the residual stream by the thread that finished it; the last block to finish, found by an
// atomic counter, then normalizes the whole row into h: the ADD_RMS_NORM launch that sat on the
// chain between two GEMVs (its wait, its reads, the next GEMV's wait) becomes a block's tail.
//
// Whole slices before the wait (kPre > 0, plain MATMUL at M = 1): where the grid is resident at
// once (at most 2 blocks per compute unit) and a lane's share of its rows is at most 8 vectors per
// row, each lane loads its whole share into registers before the programmatic wait, so all of W is
// in flight while the predecessor still runs, instead of 2 vectors per row. It pays where the
// predecessor leaves the memory idle: the o_proj after a batch-1 decode attention (4 blocks, a few
// hundred KB of cache), whose 16.8 MB (Qwen3-30B-A3B) then stream under the attention; after the
// wait a lane has only its x vectors to read (L2). PORTLLM_GEMV_REG_PRELOAD=0 takes the streaming
// form (whole_slice_pre).
#include <algorithm>
#include <array>
#include <cstdlib>

#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "backends/gpu/vec_io.cuh"
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
// The norm weight vectors (16 bytes) per thread loaded before the wait: all of a 4096-wide row.
constexpr int kNormWPre = 2;
enum class Form {
  Plain,    // MATMUL, MATMUL_SILU_MUL
  Norm,     // ADD_RMS_NORM_MATMUL: every block normalizes the row first
  AddNorm,  // MATMUL_ADD_RMS_NORM: outputs into the residual, the last block normalizes it into h
};
// Blocks per SM the registers are sized for: the plain GEMV at M = 1 needs 48 registers (5 blocks
// of 256 threads), at larger M ~75 (3 blocks); the norm form ~80 (3 blocks), so it takes grids of
// at most 3 blocks per SM (see supports_norm), where a fourth and fifth would hold no block anyway.
// Bounding the norm form to 48 registers spilled and measured slower (Qwen3-30B-A3B batch 1: 3.09
// against 2.96 ms per step). The AddNorm form fits 48 too.
template <int M, Form F> constexpr int kMinBlocks = M == 1 && F != Form::Norm ? 5 : 3;
// The whole-slice form (kPre vectors per row and lane held before the wait, up to 64 registers of
// W): 2 blocks per SM, which is also the bound on its grid (resident at once).
constexpr int kPreBlocksPerUnit = 2;
constexpr int kMaxPre = 8;
template <int M, Form F, int kPre> constexpr int kLaunchMinBlocks = kPre > 0 ? kPreBlocksPerUnit : kMinBlocks<M, F>;

// Form::AddNorm's operands: the residual stream (updated in place; h goes to `out`) and the norm.
template <class T>
struct AddNormIn {
  T* res = nullptr;
  int64_t res_ld = 0;
  const T* weight = nullptr;
  float eps = 0.f, offset = 0.f;
};

#if !defined(PORTLLM_GPU_MUSA)
// The arrival counter of Form::AddNorm's launches: zero when the module loads, wrapped back to 0
// by each launch's last block (atomicInc), so graphs need no memset. One counter serves every
// launch because two never overlap: each one's successor is a plain GEMV, which waits for it to
// finish before it lets the next kernel start (programmatic_launch.cuh), and all run on the
// device's main stream.
__device__ unsigned int g_add_norm_counter;

// The last block's work: rows [0, m_rows) of the residual, which every block of the launch wrote,
// read from L2 (a line another block of this SM left in L1 would be stale), normalized into h with
// ADD_RMS_NORM's rounding (the normalized value rounded once). Each thread keeps its vectors of
// the row, and their norm weights, in registers from one round of loads (the norm is on the
// chain: a second read of the row cost a second L2 round trip): rows of up to kLastVecs * 8 *
// kThreads = 4096 values (supports(); four vectors per thread spilled at 48 registers, so wider
// rows keep the separate ADD_RMS_NORM); N % 8 == 0.
constexpr int kLastVecs = 2;
template <class T>
__device__ void add_norm_last_block(const AddNormIn<T>& a, T* h, int64_t h_ld, int m_rows, int64_t N) {
  __shared__ float red[32];  // block_sum's
  const int tid = int(threadIdx.x);
  const int64_t nv = N / 8;
  for (int m = 0; m < m_rows; ++m) {
    const T* row = a.res + m * a.res_ld;
    uint4 rv[kLastVecs], wv[kLastVecs];
#pragma unroll
    for (int i = 0; i < kLastVecs; ++i) {
      const int64_t v = tid + int64_t(i) * kThreads;
      if (v < nv) {
        rv[i] = __ldcg(reinterpret_cast<const uint4*>(row + 8 * v));
        wv[i] = *reinterpret_cast<const uint4*>(a.weight + 8 * v);
      }
    }
    float ss = 0.f;
#pragma unroll
    for (int i = 0; i < kLastVecs; ++i) {
      if (tid + int64_t(i) * kThreads >= nv) break;
      float f[8];
      unpack8<T>(rv[i], f);
#pragma unroll
      for (int k = 0; k < 8; ++k) ss += f[k] * f[k];
    }
    const float inv = rsqrtf(block_sum(ss, red) / float(N) + a.eps);
#pragma unroll
    for (int i = 0; i < kLastVecs; ++i) {
      const int64_t v = tid + int64_t(i) * kThreads;
      if (v >= nv) break;
      float f[8], w[8];
      unpack8<T>(rv[i], f);
      unpack8<T>(wv[i], w);
#pragma unroll
      for (int k = 0; k < 8; ++k) f[k] = f[k] * inv * (a.offset + w[k]);
      store_vec<T, 8>(h + m * h_ld + 8 * v, f);
    }
  }
}
#endif

// ADD_RMS_NORM_MATMUL's norm (kNorm): x is not read from memory; every block computes the M rows
// h = rmsnorm(res + delta) * (offset + weight) into shared memory itself, after the wait, while its
// first weight vectors are in flight. Block b stores its 1/gridDim share of the updated residual
// (to res_out, a buffer no block reads) and of h when h is kept.
template <class T>
struct NormIn {
  const T* res = nullptr;
  int64_t res_ld = 0;
  const T* delta = nullptr;
  int64_t delta_ld = 0;
  T* res_out = nullptr;
  int64_t res_out_ld = 0;
  T* h = nullptr;  // null: h is not stored
  int64_t h_ld = 0;
  const T* weight = nullptr;
  float eps = 0.f, offset = 0.f;
};

// The norm weight's first kNormWPre vectors of this thread (v = tid + i kThreads), before the
// wait: a weight, written by no kernel. The second pass would otherwise wait on them.
template <class T>
__device__ __forceinline__ void prefetch_norm_weight(const NormIn<T>& n, int64_t K, uint4 (&nw)[kNormWPre]) {
#pragma unroll
  for (int i = 0; i < kNormWPre; ++i) {
    const int64_t v = int64_t(threadIdx.x) + int64_t(i) * kThreads;
    if (v < K / 8) nw[i] = *reinterpret_cast<const uint4*>(n.weight + 8 * v);
  }
}

// Rows [0, m_rows) of h into xs ([m_rows][K], stride K), with ADD_RMS_NORM's rounding: the sum is
// rounded to T, the normalized value once at the end. The whole block calls it; a thread handles
// the same vectors in both passes, so only the sum of squares needs barriers.
template <class T, int M>
__device__ void norm_rows(const NormIn<T>& n, int m_rows, int64_t K, T* xs, const uint4 (&nw)[kNormWPre]) {
  constexpr int kNV = 2;  // 16-byte vectors per thread in flight per pass
  __shared__ float red[kWarps][M];
  const int tid = int(threadIdx.x), lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int64_t nv = K / 8;
  const int64_t per = (nv + gridDim.x - 1) / gridDim.x, mine0 = int64_t(blockIdx.x) * per, mine1 = mine0 + per;
  float ss[M];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    ss[m] = 0.f;
    if (m >= m_rows) continue;
    for (int64_t v0 = 0; v0 < nv; v0 += int64_t(kNV) * kThreads) {
      uint4 ra[kNV], rb[kNV];  // raw vectors: the weight vectors in flight hold 16 registers already
#pragma unroll
      for (int u = 0; u < kNV; ++u) {
        const int64_t v = v0 + int64_t(u) * kThreads + tid;
        if (v >= nv) break;
        ra[u] = *reinterpret_cast<const uint4*>(n.res + m * n.res_ld + 8 * v);
        rb[u] = *reinterpret_cast<const uint4*>(n.delta + m * n.delta_ld + 8 * v);
      }
#pragma unroll
      for (int u = 0; u < kNV; ++u) {
        const int64_t v = v0 + int64_t(u) * kThreads + tid;
        if (v >= nv) break;
        float a[8], b[8];
        unpack8<T>(ra[u], a);
        unpack8<T>(rb[u], b);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          a[i] = round_to<T>(a[i] + b[i]);  // the residual stream keeps the activation dtype
          ss[m] += a[i] * a[i];
        }
        store_vec<T, 8>(xs + m * K + 8 * v, a);
        if (v >= mine0 && v < mine1) store_vec<T, 8>(n.res_out + m * n.res_out_ld + 8 * v, a);
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const float v = warp_sum(ss[m]);
    if (lane == 0) red[warp][m] = v;
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < M; ++m) {
    if (m >= m_rows) break;
    float t = 0.f;
    for (int i = 0; i < kWarps; ++i) t += red[i][m];  // fixed order: every block gets the same h
    const float inv = rsqrtf(t / float(K) + n.eps);
    for (int64_t v = tid; v < nv; v += kThreads) {
      float r[8], w[8];
      load_vec<T, 8>(xs + m * K + 8 * v, r);
      const int64_t i = (v - tid) / kThreads;
      if (i < kNormWPre) {
#pragma unroll
        for (int j = 0; j < kNormWPre; ++j)  // registers: the index must be a constant
          if (j == i) unpack8<T>(nw[j], w);
      } else {
        load_vec<T, 8>(n.weight + 8 * v, w);
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) r[i] = r[i] * inv * (n.offset + w[i]);
      store_vec<T, 8>(xs + m * K + 8 * v, r);
      if (n.h && v >= mine0 && v < mine1) store_vec<T, 8>(n.h + m * n.h_ld + 8 * v, r);
    }
  }
  __syncthreads();
}

template <class T, class TO, int M, bool kGated, Form kForm, int kPre>
__global__ void __launch_bounds__(kThreads, kLaunchMinBlocks<M, kForm, kPre>)
    gemv_kernel(TO* out, int64_t out_ld, const T* __restrict__ x, int64_t x_ld, const T* __restrict__ w, int64_t w_ld,
                const void* bias, DType bias_t, int m_rows, int64_t N, int64_t K, int split, int64_t k_slice,
                NormIn<T> norm, AddNormIn<T> add, bool evict_first /* W's L2 policy: load_weight16 */) {
  constexpr bool kNorm = kForm == Form::Norm;
  const unsigned long long l2_policy = gpu_stream_policy();
  __shared__ float part[kWarps][M][kRows];
  extern __shared__ __align__(16) unsigned char gemv_dyn_smem[];  // kNorm: h, [m_rows][K] of T
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int slice = warp % split;
  // This warp's outputs: kRows consecutive rows of W, or (gated) output j = n0 from rows j, j + N.
  const int64_t unit = int64_t(blockIdx.x) * (kWarps / split) + warp / split;
  const int64_t n0 = kGated ? unit : unit * kRows, w_rows = kGated ? 2 * N : N;
  const int64_t k_begin = int64_t(slice) * k_slice, k_end = std::min(K, k_begin + k_slice);
  float acc[M][kRows];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[m][r] = 0.f;
  const T* wr[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r)  // clamp: rows past the end are not stored
    wr[r] = w + std::min<int64_t>(kGated ? n0 + r * N : n0 + r, w_rows - 1) * w_ld;
  constexpr int kStep = kWarpSize * 8;
  constexpr int64_t kStride = int64_t(kStep) * kUnroll;
  uint4 wv[kUnroll][kRows];
  auto load_w = [&](int64_t k0) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = k0 + int64_t(u) * kStep;
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        wv[u][r] = k < k_end ? load_weight16(wr[r] + k, evict_first, l2_policy) : make_uint4(0, 0, 0, 0);
    }
  };
  auto consume_vec = [&](const uint4 (&v)[kRows], int64_t k) {
    float wf[kRows][8];
#pragma unroll
    for (int r = 0; r < kRows; ++r) unpack8<T>(v[r], wf[r]);
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
  };
  auto consume = [&](int64_t k0) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = k0 + int64_t(u) * kStep;
      if (k >= k_end) break;
      consume_vec(wv[u], k);
    }
  };
  // Warps past the last row skip the stream but still reach the block barrier below. The first
  // kDepth weight vectors per row are in flight before the wait (W is no earlier kernel's output,
  // x is): one iteration's kUnroll, or with kPre a lane's whole share of its rows (the launcher
  // checks that it is at most kPre vectors).
  constexpr int kDepth = kPre > 0 ? kPre : kUnroll;
  const int64_t k_first = k_begin + int64_t(lane) * 8;
  const bool streams = n0 < N && k_first < k_end;
  uint4 wpre[kDepth][kRows];
#pragma unroll
  for (int p = 0; p < kDepth; ++p) {
    const int64_t k = k_first + int64_t(p) * kStep;
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      wpre[p][r] = streams && k < k_end ? load_weight16(wr[r] + k, evict_first, l2_policy) : make_uint4(0, 0, 0, 0);
  }
  uint4 nw[kNormWPre];
  if constexpr (kNorm) prefetch_norm_weight(norm, K, nw);
  const bool finishes = lane == 0 && slice == 0;  // this thread stores the warp's outputs
  gpu_wait_for_predecessor();
  gpu_allow_successor();
  if constexpr (kNorm) {
    T* xs = reinterpret_cast<T*>(gemv_dyn_smem);
    norm_rows<T, M>(norm, m_rows, K, xs, nw);
    x = xs;
    x_ld = K;
  }
  // AddNorm: the residual's old values at the warp's two rows, one word per row of x, loaded now
  // and held across the stream (used only at the end).
  static_assert(kForm != Form::AddNorm || kRows == 2, "the epilogue's words hold two rows");
  uint32_t res2[M];
  if constexpr (kForm == Form::AddNorm) {
#pragma unroll
    for (int m = 0; m < M; ++m)
      res2[m] = finishes && m < m_rows && n0 < N ? *reinterpret_cast<const uint32_t*>(add.res + m * add.res_ld + n0) : 0u;
  }
  if (streams) {
    // What was loaded before the wait, then the rest of the share (with kPre, only where the share
    // is deeper than kPre: PORTLLM_GEMV_REG_PRELOAD=4).
#pragma unroll
    for (int p = 0; p < kDepth; ++p) {
      const int64_t k = k_first + int64_t(p) * kStep;
      if (k < k_end) consume_vec(wpre[p], k);
    }
    for (int64_t k0 = k_first + int64_t(kDepth) * kStep; k0 < k_end; k0 += kStride) {
      load_w(k0);
      consume(k0);
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float v = warp_sum(acc[m][r]);  // every lane takes part (no early exit above)
      if (split > 1 && lane == 0) part[warp][m][r] = v;
      acc[m][r] = v;
    }
  if (split > 1) __syncthreads();
#if !defined(PORTLLM_GPU_MUSA)
  if constexpr (kForm == Form::AddNorm) {
    // Each warp's two rows into the residual (MATMUL's output rounded, then the sum), then the
    // launch's last block normalizes the whole row.
    if (finishes) {
#pragma unroll
      for (int m = 0; m < M; ++m) {
        if (m >= m_rows || n0 >= N) continue;  // N is even: both rows exist
        float old_res[2], h[2];
        unpack2<T>(res2[m], old_res);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float v = acc[m][r];
          for (int s2 = 1; s2 < split; ++s2) v += part[warp + s2][m][r];
          h[r] = round_to<T>(old_res[r] + round_to<T>(v + bias_value(bias, bias_t, n0 + r)));
        }
        *reinterpret_cast<uint32_t*>(add.res + m * add.res_ld + n0) = pack2<T>(h[0], h[1]);
      }
      __threadfence();  // this thread's stores are visible device-wide before the block counts
    }
    __shared__ bool s_last;
    __syncthreads();
    if (threadIdx.x == 0) {
      const unsigned last = gridDim.x - 1;
      s_last = atomicInc(&g_add_norm_counter, last) == last;  // wraps to 0 for the next launch
    }
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    add_norm_last_block<T>(add, reinterpret_cast<T*>(out), out_ld, m_rows, N);
    return;
  }
#endif
  if (!finishes) return;
#pragma unroll
  for (int m = 0; m < M; ++m) {
    if (m >= m_rows) break;
    if constexpr (kGated) {
      static_assert(kRows == 2, "gate and up rows");
      if (n0 >= N) break;
      float gu[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float v = acc[m][r];
        for (int s2 = 1; s2 < split; ++s2) v += part[warp + s2][m][r];
        gu[r] = round_to<T>(v);
      }
      out[int64_t(m) * out_ld + n0] = cvt<TO>(silu_times(gu[0], gu[1]));
    } else {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t n = n0 + r;
        if (n >= N) continue;
        float v = acc[m][r];
        for (int s2 = 1; s2 < split; ++s2) v += part[warp + s2][m][r];
        out[int64_t(m) * out_ld + n] = cvt<TO>(v + bias_value(bias, bias_t, n));
      }
    }
  }
}

// K slices per row group, 1 or 2. Measured on the H200 (`ops perf -o MATMUL`, M = 1, bf16, us at
// split 1 / 2 / 4 / 8; ~48 registers, so 5 blocks of 256 threads per SM, one wave = 660 blocks):
//   gate_up 24576 x 4096   50.2 / 48.2 / 47.9 / 48.2   (1536 / 3072 / ... blocks)
//   down     4096 x 12288  31.7 / 25.8 / 27.2 / 27.3   (256 / 512 / 1024 / 2048)
//   o_proj   4096 x 4096    8.5 /  6.9 /  8.2 /  8.4   (256 / 512 / 1024 / 2048)
//   qkv      6144 x 4096   12.4 / 15.7 / 13.9 / 14.4   (384 / 768 / 1536 / 3072)
// Two slices pay on long rows (K >= 4096: twice the warps streaming W) unless the doubled grid
// spills just past one wave (qkv: 768 blocks = 1.16 waves); more slices only add partial sums.
// PORTLLM_GEMV_SPLIT (1, 2, 4 or 8; read once) overrides the choice, for measuring.
int choose_split(int64_t N, int64_t K, int compute_units) {
  static const int forced = [] {
    const char* e = std::getenv("PORTLLM_GEMV_SPLIT");
    const int v = e ? std::atoi(e) : 0;
    return v == 1 || v == 2 || v == 4 || v == 8 ? std::min(v, kWarps) : 0;
  }();
  if (forced) return forced;
  if (kWarps < 2) return 1;
  // Few rows (a MoE router: 64-256 x 2048; Qwen3.5's shared-expert gate: 1 row): at split 1 the
  // grid is a handful of blocks, each warp walking its rows' whole K with a load round trip per
  // step. Splitting K over up to all of a block's warps puts the whole stream in flight at once,
  // as long as a slice keeps at least one vector per lane and the grid stays within one wave.
  const int64_t blocks1 = (N + int64_t(kRows) * kWarps - 1) / (int64_t(kRows) * kWarps);
  if (blocks1 * 4 <= compute_units) {
    int split = 1;
    for (int s = 2; s <= kWarps; s *= 2)
      if (K / s >= int64_t(kWarpSize) * 8 && blocks1 * s <= compute_units) split = s;
    return split;
  }
  if (K < 4096) return 1;
  const int64_t rows_per_block = int64_t(kRows) * (kWarps / 2);
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block, wave = 5 * int64_t(compute_units);
  return blocks <= wave || blocks >= 4 * wave ? 2 : 1;
}

// The whole-slice form's depth for a plain M = 1 launch: 4 or kMaxPre vectors per row and lane
// when a lane's share of K fits that many and the grid is resident at once; 0 (the streaming
// form) otherwise. PORTLLM_GEMV_REG_PRELOAD (0, 4 or 8; read once) bounds the depth, for
// measuring: 0 takes the streaming form, 4 holds half of an 8-vector share (the rest streams
// after the wait).
int whole_slice_pre(int64_t k_slice, unsigned grid, Stream& s) {
  static const int most = std::array<int, 3>{0, 4, kMaxPre}[env_switch("PORTLLM_GEMV_REG_PRELOAD", {"0", "4", "8"}, 2)];
  const int64_t vecs = k_slice / (int64_t(kWarpSize) * 8);
  if (vecs > kMaxPre || int64_t(grid) > int64_t(kPreBlocksPerUnit) * caps_of(s).num_compute_units) return 0;
  return std::min(most, vecs <= 4 ? 4 : kMaxPre);
}

// Blocks of a launch() for W [rows, K] at choose_split's split (gated: rows / 2 outputs).
int64_t grid_blocks(int64_t rows, bool gated, int split) {
  const int64_t outs_per_block = int64_t(gated ? 1 : kRows) * (kWarps / split), N = gated ? rows / 2 : rows;
  return (N + outs_per_block - 1) / outs_per_block;
}

// The fused norm's operands (a null `res` when the launch has no norm).
struct NormTensors {
  const Tensor* res = nullptr;
  const Tensor *delta = nullptr, *res_out = nullptr, *h = nullptr, *weight = nullptr;
  float eps = 0.f, offset = 0.f;
};

// Form::AddNorm's operands (out is h).
struct AddNormTensors {
  const Tensor *res = nullptr, *weight = nullptr;
  float eps = 0.f, offset = 0.f;
};

// out [M, N] (gated: N = I outputs from the 2I rows of w); x is unused with a norm (M = its rows).
template <class T, int M, bool kGated, Form kForm>
void launch(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const NormTensors& nt,
            const AddNormTensors& at, Stream& s) {
  constexpr bool kNorm = kForm == Form::Norm;
  const int64_t N = kGated ? w.size(0) / 2 : w.size(0), K = w.size(1);
  const int split = choose_split(w.size(0), K, caps_of(s).num_compute_units);
  const int64_t k_slice = ((K + split - 1) / split + kWarpSize * 8 - 1) / (kWarpSize * 8) * (kWarpSize * 8);
  const unsigned grid = unsigned(grid_blocks(w.size(0), kGated, split));
  const Tensor& rows = kNorm ? *nt.res : x;
  NormIn<T> n;
  size_t smem = 0;
  if constexpr (kNorm) {
    n.res = nt.res->ptr<T>();
    n.res_ld = nt.res->strides[0];
    n.delta = nt.delta->ptr<T>();
    n.delta_ld = nt.delta->strides[0];
    n.res_out = nt.res_out->ptr<T>();
    n.res_out_ld = nt.res_out->strides[0];
    if (nt.h->defined()) {
      n.h = nt.h->ptr<T>();
      n.h_ld = nt.h->strides[0];
    }
    n.weight = nt.weight->ptr<T>();
    n.eps = nt.eps;
    n.offset = nt.offset;
    smem = size_t(rows.size(0) * K) * sizeof(T);
  }
  AddNormIn<T> an;
  if constexpr (kForm == Form::AddNorm) {
    an.res = at.res->ptr<T>();
    an.res_ld = at.res->strides[0];
    an.weight = at.weight->ptr<T>();
    an.eps = at.eps;
    an.offset = at.offset;
  }
  // The whole-slice form: a lane's share of its rows is k_slice / (32 * 8) vectors.
  const int pre = kForm == Form::Plain && !kGated && M == 1 ? whole_slice_pre(k_slice, grid, s) : 0;
  auto go = [&](auto to) {
    using TO = typename decltype(to)::type;
    auto run = [&](auto kernel) {
      launch_programmatic(s, kernel, dim3(grid), dim3(kThreads), smem, out.ptr<TO>(), out.strides[0],
                          static_cast<const T*>(kNorm ? nullptr : x.data), kNorm ? 0 : x.strides[0],
                          static_cast<const T*>(w.data), w.strides[0], bias.defined() ? bias.data : nullptr,
                          bias.defined() ? bias.dtype : DType::F32, int(rows.size(0)), N, K, split, k_slice, n, an,
                          l2_evict_first());
    };
    if constexpr (kForm == Form::Plain && !kGated && M == 1) {
      if (pre == 4) return run(gemv_kernel<T, TO, M, kGated, kForm, 4>);
      if (pre == kMaxPre) return run(gemv_kernel<T, TO, M, kGated, kForm, kMaxPre>);
    }
    run(gemv_kernel<T, TO, M, kGated, kForm, 0>);
  };
  if constexpr (kForm == Form::AddNorm) go(Tag<T>{});  // h has the activation dtype
  else dispatch_float(out.dtype, go);
}

template <bool kGated, Form kForm>
void launch_any(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const NormTensors& nt,
                const AddNormTensors& at, Stream& s) {
  const Tensor& rows = kForm == Form::Norm ? *nt.res : x;
  const int64_t M = rows.size(0);
  auto go = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (M == 1) launch<T, 1, kGated, kForm>(out, x, w, bias, nt, at, s);
    else if (M == 2) launch<T, 2, kGated, kForm>(out, x, w, bias, nt, at, s);
    else if (M <= 4) launch<T, 4, kGated, kForm>(out, x, w, bias, nt, at, s);
    else launch<T, 8, kGated, kForm>(out, x, w, bias, nt, at, s);
  };
  if (rows.dtype == DType::BF16) go(Tag<gpu_bf16>{});
  else go(Tag<gpu_half>{});
}

bool vec_ok(const Tensor& x, const Tensor& w) {
  return aligned16(x.data) && aligned16(w.data) && x.strides[0] % 8 == 0 && w.strides[0] % 8 == 0 && w.size(1) % 8 == 0;
}

void gemv(const MatmulArgs& a, Stream& s) {
  if (a.x.size(0) == 0 || a.w.size(0) == 0) return;
  if (!vec_ok(a.x, a.w)) return run_kernel("gpu.matmul_blas", &a, s);  // views 16-byte loads cannot take
  launch_any<false, Form::Plain>(a.out, a.x, a.w, a.bias, {}, {}, s);
  check_launch("gemv");
}

void gemv_silu_mul(const MatmulSiluMulArgs& a, Stream& s) {
  if (a.x.size(0) == 0 || a.out.size(1) == 0) return;
  if (!vec_ok(a.x, a.w) || a.w.size(0) != 2 * a.out.size(1)) {
    // Unaligned views: MATMUL into a scratch [M, 2I] then SILU_MUL, through the registry.
    const std::shared_ptr<void> buf = scratch(s, size_t(a.x.size(0) * a.w.size(0)) * dtype_size(a.out.dtype));
    const Tensor gu = Tensor::view_of(buf.get(), a.out.dtype, {a.x.size(0), a.w.size(0)}, kGpuKind, 0, buf);
    const MatmulArgs mm{gu, a.x, a.w, {}, {}, 0, 0};
    run_kernel("gpu.matmul_blas", &mm, s);
    const int64_t I = a.out.size(1);
    const SiluMulArgs sm{a.out, gu.slice(1, 0, I), gu.slice(1, I, I)};
    run_kernel("gpu.silu_mul", &sm, s);
    return;
  }
  launch_any<true, Form::Plain>(a.out, a.x, a.w, Tensor(), {}, {}, s);
  check_launch("gemv_silu_mul");
}

// ADD_RMS_NORM_MATMUL: views the 16-byte loads cannot take, or rows that would not fit the shared
// memory, run ADD + RMS_NORM + the GEMV (the op's definition) through the registry.
void gemv_norm(const AddRmsNormMatmulArgs& a, Stream& s) {
  const int64_t M = a.residual.size(0), K = a.residual.size(1);
  if (M == 0 || a.w.size(0) == 0) return;
  const bool vec = vec_ok(a.residual, a.w) && vec_ok(a.x, a.w) && vec_ok(a.residual_out, a.w) &&
                   aligned16(a.norm_weight.data) && (!a.h.defined() || vec_ok(a.h, a.w)) &&
                   (!a.gated || a.w.size(0) == 2 * a.out.size(1));
  if (!vec) {
    const std::shared_ptr<void> buf =
        a.h.defined() ? nullptr : scratch(s, size_t(M * K) * dtype_size(a.residual.dtype));
    const Tensor h = a.h.defined() ? a.h : Tensor::view_of(buf.get(), a.residual.dtype, {M, K}, kGpuKind, 0, buf);
    const AddArgs add{a.residual_out, a.residual, a.x};
    run_kernel("gpu.add", &add, s);
    const RmsNormArgs norm{h, a.residual_out, a.norm_weight, a.eps, a.weight_offset};
    run_kernel("gpu.rms_norm", &norm, s);
    if (a.gated) {
      const MatmulSiluMulArgs mm{a.out, h, a.w};
      return gemv_silu_mul(mm, s);
    }
    const MatmulArgs mm{a.out, h, a.w, a.bias, {}, 0, 0};
    return gemv(mm, s);
  }
  const NormTensors nt{&a.residual, &a.x, &a.residual_out, &a.h, &a.norm_weight, a.eps, a.weight_offset};
  if (a.gated) launch_any<true, Form::Norm>(a.out, Tensor(), a.w, Tensor(), nt, {}, s);
  else launch_any<false, Form::Norm>(a.out, Tensor(), a.w, a.bias, nt, {}, s);
  check_launch("gemv_norm");
}

#if !defined(PORTLLM_GPU_MUSA)
// MATMUL_ADD_RMS_NORM: supports() admits only what the loads take (16-byte rows of x, W, h and the
// residual; words of two rows), so it launches as it is.
void gemv_add_rms_norm(const MatmulAddRmsNormArgs& a, Stream& s) {
  if (a.x.size(0) == 0 || a.w.size(0) == 0) return;
  if (!vec_ok(a.x, a.w) || !vec_ok(a.residual, a.w) || !vec_ok(a.h, a.w) || !aligned16(a.norm_weight.data))
    fail("MATMUL_ADD_RMS_NORM: x, W, the residual, h and the norm weight must be 16-byte aligned rows");
  const AddNormTensors at{&a.residual, &a.norm_weight, a.eps, a.weight_offset};
  launch_any<false, Form::AddNorm>(a.h, a.x, a.w, a.bias, {}, at, s);
  check_launch("gemv_add_rms_norm");
}
#endif

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
// The norm's rows must fit the shared memory every GPU gives a block (48 KB) next to `part`, and
// the norm weight shares the activation dtype. Every block reads the residual and x from L2 and
// normalizes before its first product, so the fused form takes grids that are resident at once
// (3 blocks per SM, its registers): a block that starts late runs that chain while the others
// stream. With Qwen3-8B's gate_up (3072 blocks) fused too, a step took 5.39 against 4.75 ms (the
// first, register-bounded form of the kernel). Qwen3-8B's and Qwen3-30B-A3B's qkv (384 and 320
// blocks) and the routers are in.
// PORTLLM_GEMV_NORM_MAX_BLOCKS (read once) moves the bound, for measuring.
bool supports_norm(const OpDesc& d, const DeviceCaps& c) {
  static const int64_t forced = [] {
    const char* e = std::getenv("PORTLLM_GEMV_NORM_MAX_BLOCKS");
    return e ? std::atoll(e) : int64_t(-1);
  }();
  const bool gated = d.flags & 1u;
  OpDesc mm = d;
  mm.dim[1] = gated ? 2 * d.dim[1] : d.dim[1];
  if (!supports(mm, c) || d.dtype[3] != d.dtype[0] || d.dim[0] * d.dim[2] * 2 > 40 * 1024) return false;
  const int64_t bound = forced >= 0 ? forced : int64_t(kMinBlocks<1, Form::Norm>) * c.num_compute_units;
  return grid_blocks(mm.dim[1], gated, choose_split(mm.dim[1], d.dim[2], c.num_compute_units)) <= bound;
}
#if !defined(PORTLLM_GPU_MUSA)
// The GEMV's shapes, the activation dtype throughout, rows of whole 16-byte vectors (the last
// block's norm).
bool supports_add_rms_norm(const OpDesc& d, const DeviceCaps& c) {
  return supports(d, c) && d.dtype[2] == d.dtype[0] && d.dtype[3] == d.dtype[0] && d.dim[1] % 8 == 0 &&
         d.dim[1] <= int64_t(kLastVecs) * 8 * kThreads;
}
#endif
}  // namespace

void register_gemv_kernels() {
  register_kernel<MatmulArgs>(Op::MATMUL, kKind, "gpu.gemv_small_m", 20, supports, gemv);
  register_kernel<MatmulSiluMulArgs>(Op::MATMUL_SILU_MUL, kKind, "gpu.gemv_silu_mul", 20, supports, gemv_silu_mul);
  register_kernel<AddRmsNormMatmulArgs>(Op::ADD_RMS_NORM_MATMUL, kKind, "gpu.gemv_add_rms_norm", 20, supports_norm,
                                        gemv_norm);
#if !defined(PORTLLM_GPU_MUSA)  // the last block's L2 reads (__ldcg) are NVIDIA's; MUSA runs MATMUL + ADD_RMS_NORM
  register_kernel<MatmulAddRmsNormArgs>(Op::MATMUL_ADD_RMS_NORM, kKind, "gpu.gemv_matmul_add_rms_norm", 20,
                                        supports_add_rms_norm, gemv_add_rms_norm);
#endif
}

}  // namespace portllm::gpu
