// MOE_GEMM for decode-sized batches: a grouped GEMV that streams each expert's weights once.
//
// At decode a MoE GEMM gets R = tokens * top_k rows, a few per expert, so the tiled kernels'
// 16- or 64-row tiles (moe_gemm.cu, moe_gemm_wmma.cu) are mostly empty and the op is a read of
// every active expert's W [N, K]: bandwidth-bound. This is gemv.cu generalized to groups. A block
// owns one row tile of one expert (BM <= 8 rows, fp8 4) and an N-slice of kSlice output columns:
//  * its x rows are staged in shared memory as f32, a K-chunk at a time when they do not fit, in
//    a layout that makes each lane's x reads conflict-free 16-byte loads (x_slot);
//  * each warp streams kRowsW rows of the expert's W, lanes reading 16-byte vectors at
//    k = V l + V kWarpSize i, kUnroll vectors per row in flight, and applies every weight to all
//    the tile's rows (acc[m][r] in registers); one warp reduction per output at the end.
// Weights: f32/bf16/f16, or f8_e4m3 decoded and block-scaled as they stream. The 16-byte path
// needs 16-byte aligned weight rows, K a multiple of the vector width V and (fp8) block_k a
// multiple of 16; other shapes take the element-wise path of the same kernel (coalesced scalar
// loads: correct, not fast).
//
// The expert segments stay on the device, so the op is capturable in a graph: the grid is an
// upper bound of row tiles from host-known sizes (grouped_tile_bound) and each block finds its
// tile by a block-wide scan of the offsets (grouped_tile_scan); blocks past the real tiles exit.
// Tiles of one expert are neighbours in blockIdx.x, so an expert with more than BM rows has its
// weights re-read mostly from L2.
//
// Gather mode (MoeGemmArgs::topk_ids, the small-batch path of ops::moe_experts): the rows are the
// T*k (token, slot) assignments themselves, unpermuted. Each block counts the assignments per
// expert in shared memory, finds its tile by the same scan over those counts, and collects its
// rows (the assignments of its expert of rank [c0, c0 + BM), in assignment order); tile row m
// reads x row a_m / k and writes out row a_m. This replaces MOE_PERMUTE's four launches. With
// 1-row tiles (batch 1) tile b is simply assignment b: no count, no scan.
//
// SwiGLU epilogue (gather mode, MoeGemmArgs::swiglu; W = [gate | up], N = 2I): a warp's kRowsW W
// rows are kRowsW / 2 gate rows c.. and the up rows I + c.. of the same columns, so each output
// column's gate and up sums end in one warp and it stores h = silu(g) * u, rounded as SILU_MUL
// would round it after the plain GEMM: out is [T*k, I], half the bytes, and MOE_DOWN_COMBINE's
// 256 blocks per token read h instead of re-evaluating 8 x 768 SwiGLUs each (Qwen3-30B-A3B).
// The grid is the plain GEMM's: half the columns per block, as many blocks.
//
// No lane ever leaves a loop that a shuffle or barrier follows at a different iteration than its
// warp (block): loop bounds are warp- or block-uniform and per-lane bounds are predicates; the
// only shuffles are the final warp_sum calls, reached by every lane of an active warp.
// Portable CUDA C++: no PTX, any kWarpSize (MUSA MP21/22 run 128-wide warps).
#include <algorithm>
#include <type_traits>

#include "backends/gpu/block_scan.cuh"
#include "backends/gpu/env_switch.h"
#include "backends/gpu/grouped_gemm.h"
#include "backends/gpu/grouped_tile.cuh"
#include "backends/gpu/moe_gemv_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "backends/gpu/vec_io.cuh"
#include "ops/op_args_moe.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;
constexpr const char* kName = "gpu.moe_gemm_gemv";
constexpr int kPriority = 30;  // above gpu.moe_gemm_wmma (20) and gpu.moe_gemm_tiled (10)

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
// W rows (output columns) per warp, which share each x read, and the blocks per SM the registers
// are sized for. fp8 decoding is ALU-bound: 2 rows per warp at 3 blocks per SM (80 registers) ran
// DeepSeek-V3's 18432 x 7168 fp8 GEMV at M = 1 in 75 us on the H200, 4 rows at 2 blocks in 86 us.
// bf16 keeps 4 rows (x reads shared by 4; 9.5 vs 11.1 us for Qwen3-30B-A3B's down projection).
template <class TW> constexpr int kRowsOf = std::is_same_v<TW, uint8_t> ? 2 : 4;
// Tiles of at most 2 rows fit 3 blocks per SM too (80 registers; 92 unbounded at 1 row): Qwen3-30B-A3B's
// batch-1 gate_up is 8 experts x 48 slices = 384 blocks, 1.45 waves at 2 per SM, one wave at 3.
template <class TW, int BM> constexpr int kMinBlocksOf = std::is_same_v<TW, uint8_t> || BM <= 2 ? 3 : 2;
template <class TW> constexpr int kSliceOf = kWarps * kRowsOf<TW>;  // output columns per block
constexpr int kXFloats = 8192;           // the staged x chunk: 32 KB (fits MUSA's 48 KB too)
// MOE_GEMM takes this kernel while rows per expert are few: R <= 64 rows, or on average at most 2
// per expert (R <= 2 E). Beyond, the tensor-core gpu.moe_gemm_mma wins: at Qwen3-30B-A3B batch 64
// (R = 512 over 128 experts, 4 per expert) it ran 214 + 109 us here against 359 + 264 us for this
// kernel; the per-row f32 FMAs cost as much as the weight stream once rows per expert grow.
constexpr int64_t kMaxRows = 64, kMaxRowsPerExpert = 2;

// Gather mode's rows: assignment a = t*k + j has expert ids[t * s0 + j * s1]; n = T*k.
struct GatherRows {
  const int32_t* ids = nullptr;  // null: rows grouped by p.expert_offsets (or one group)
  int64_t s0 = 0, s1 = 0;
  int k = 1;
  int64_t n = 0;
  bool swiglu = false;  // the SwiGLU epilogue (moe_gemv_gather only)
  __device__ __forceinline__ int id(int64_t a) const { return ids[(a / k) * s0 + (a % k) * s1]; }
};

// Gather mode: row tile b among the assignments grouped by expert (the tiles of expert e are
// ceil(count_e / BM), in expert order, as grouped_tile_scan walks them; 1-row tiles in assignment
// order, so tile b is assignment b). On success e is the
// expert, rows the tile's row count and slot[0, rows) its assignments in increasing order.
// scratch: E + n ints when stage_ids (the ids are then read from shared memory), else E; scan:
// kThreads + 2 ints. Every thread of the block must call it; all get the same answer.
template <int BM>
__device__ bool gather_tile(const GatherRows& g, int E, bool stage_ids, int* scratch, int* scan, int b, int& e,
                            int& rows, int* slot) {
  const int tid = int(threadIdx.x);
  if constexpr (BM == 1) {
    // One row per tile: tile b is assignment b itself, so no counting or scan stands between the
    // wait and the first weight loads (batch 1, where that chain is most of the kernel).
    if (b >= g.n) return false;  // past the real tile count
    e = g.id(b);
    if (e < 0 || e >= E) return false;  // as below: an invalid id gets no tile
    rows = 1;
    if (tid == 0) slot[0] = b;  // read back by thread 0 only (rows = 1): no barrier needed
    return true;
  }
  int* count = scratch;    // [E]
  int* ids = scratch + E;  // [n] when stage_ids
  for (int i = tid; i < E; i += kThreads) count[i] = 0;
  __syncthreads();
  for (int64_t a = tid; a < g.n; a += kThreads) {
    const int id = g.id(a);
    if (stage_ids) ids[a] = id;
    if (id >= 0 && id < E) atomicAdd(&count[id], 1);
  }
  __syncthreads();
  int* found = scan + kThreads;  // {expert, its first tile}
  if (tid == 0) found[0] = -1;   // ordered before any write below by the scan's barriers
  int carry = 0;
  for (int base = 0; base < E; base += kThreads) {  // block-uniform trip count
    const int ex = base + tid;
    const int v = ex < E ? (count[ex] + BM - 1) / BM : 0;
    int total = 0;
    const int incl = block_scan_incl(v, scan, total);
    if (ex < E && carry + incl - v <= b && b < carry + incl) {  // tile ranges are disjoint: one writer
      found[0] = ex;
      found[1] = carry + incl - v;
    }
    carry += total;
  }
  __syncthreads();
  e = found[0];
  if (e < 0) return false;  // past the real tile count
  const int c0 = (b - found[1]) * BM;  // rank (among e's assignments) of the tile's first row
  rows = min(BM, count[e] - c0);
  for (int64_t a = tid; a < g.n; a += kThreads) {
    if ((stage_ids ? ids[a] : g.id(a)) != e) continue;
    int rank = 0;  // e's assignments before a: at decode a short loop over shared memory
    for (int64_t q = 0; q < a; ++q) rank += (stage_ids ? ids[q] : g.id(q)) == e ? 1 : 0;
    if (rank >= c0 && rank < c0 + rows) slot[rank - c0] = int(a);
  }
  __syncthreads();
  return true;
}

template <class TX, class TW, class TO, int BM, bool kVec, bool kSwiGLU>
__global__ void __launch_bounds__(kThreads, kMinBlocksOf<TW, BM>) grouped_gemv_kernel(GroupedGemmParams p, GatherRows gr) {
  constexpr bool kFp8 = std::is_same_v<TW, uint8_t>;
  constexpr int kRowsW = kRowsOf<TW>;
  // Output columns per warp and per block: with the SwiGLU epilogue a column takes two W rows.
  constexpr int kCols = kSwiGLU ? kRowsW / 2 : kRowsW, kSlice = kWarps * kCols;
  constexpr int V = kVec ? WVec<TW>::V : 1;  // weights per load
  constexpr int XV = kVec ? V : 4;          // x layout (x_slot)
  constexpr int G = XV / 4;                 // float4 groups per load (vector path)
  constexpr int kUnroll = kVec ? 2 : 4;     // loads per row in flight
  constexpr int kStep = kWarpSize * V;      // K covered by one warp-wide load of a row
  constexpr int kIter = kStep * kUnroll;    // K covered per loop iteration
  using Raw = std::conditional_t<kVec, uint4, TW>;
  const unsigned long long l2_policy = gpu_stream_policy();

  // The staged x; in gather mode first the per-expert counts and ids of the tile lookup (the
  // lookup ends with a barrier before anything stages x).
  __shared__ __align__(16) union {
    float x[kXFloats];
    int scratch[kXFloats];
  } sm;
  float* xs = sm.x;
  __shared__ int scan_sm[kThreads + 2];
  __shared__ int tile_slot[BM];               // gather mode: the tile's assignments
  __shared__ int64_t x_row[BM], out_row[BM];  // tile row m: x row and out row

  gpu_wait_for_predecessor();  // launched programmatically: ids, offsets and x are earlier outputs
  gpu_allow_successor();
  int e, rows;
  if (gr.ids) {
    const bool stage_ids = int64_t(p.num_experts) + gr.n <= kXFloats;
    if (!gather_tile<BM>(gr, p.num_experts, stage_ids, sm.scratch, scan_sm, int(blockIdx.x), e, rows, tile_slot))
      return;  // whole block
    if (int(threadIdx.x) < rows) {
      const int a = tile_slot[threadIdx.x];
      x_row[threadIdx.x] = a / gr.k;
      out_row[threadIdx.x] = a;
    }
  } else {
    int64_t row0, row_end;
    if (!grouped_tile_scan<BM>(p, scan_sm, int(blockIdx.x), e, row0, row_end)) return;  // whole block
    rows = int(row_end - row0);
    if (rows <= 0) return;  // whole block (offsets past p.rows)
    if (int(threadIdx.x) < rows) x_row[threadIdx.x] = out_row[threadIdx.x] = row0 + int(threadIdx.x);
  }
  __syncthreads();  // x_row / out_row

  const int tid = int(threadIdx.x), lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int64_t K = p.K;
  const int64_t NC = kSwiGLU ? p.N / 2 : p.N;  // output columns
  const int64_t n0 = int64_t(blockIdx.y) * kSlice + int64_t(warp) * kCols;  // the warp's first
  const bool active = n0 < NC;  // warp-uniform: a warp past the columns only helps stage x
  // Row r of the warp is W row n0 + r of expert e (SwiGLU: gate rows n0 + r for r < kCols, then
  // up rows NC + n0 + r - kCols, up_shift rows further); rows of missing columns are never
  // loaded (rv).
  const TW* w0 = static_cast<const TW*>(p.w) + int64_t(e) * p.w_es + (active ? n0 : 0) * p.w_ld;
  const int64_t up_shift = kSwiGLU ? (NC - kCols) * p.w_ld : 0;
  const float* s_e = kFp8 ? p.scale + int64_t(e) * p.s_es : nullptr;
  int soff[kRowsW];  // fp8: offset of each row's scale row in s_e (the scale tensor is small)
  bool rv[kRowsW];   // W row exists (its column is < NC)
#pragma unroll
  for (int r = 0; r < kRowsW; ++r) {
    const int64_t c = n0 + r % kCols, row = c + (r >= kCols ? NC : 0);
    rv[r] = c < NC;
    soff[r] = kFp8 && rv[r] ? int((row / p.block_n) * p.s_s0) : 0;
  }

  float acc[BM][kRowsW];
#pragma unroll
  for (int m = 0; m < BM; ++m)
#pragma unroll
    for (int r = 0; r < kRowsW; ++r) acc[m][r] = 0.f;

  // K per staged chunk: as much as the rows leave room for, a multiple of 16 (x_slot, V).
  const int kc_stride = (kXFloats / rows) & ~15;
  const TX* x = static_cast<const TX*>(p.x);
  Raw raw[kUnroll][kRowsW];
  float sc[kUnroll][kRowsW];  // fp8: block scale of each load (the compiler drops it otherwise)

  for (int64_t c0 = 0; c0 < K; c0 += kc_stride) {  // block-uniform
    const int kc = int(std::min<int64_t>(kc_stride, K - c0));

    // Loads of one iteration (chunk-relative base): predicated per lane, zeros outside.
    auto load = [&](int base) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int kk = base + u * kStep + lane * V;
        const bool ok = kk < kc;
        const int64_t k = c0 + kk;
        int64_t sk = 0;
        if constexpr (kFp8) sk = ok ? int64_t(int(k) / p.block_k) * p.s_s1 : 0;  // K < 2^31 (supports)
#pragma unroll
        for (int r = 0; r < kRowsW; ++r) {
          const bool in = ok && rv[r];
          const TW* src = w0 + r * p.w_ld + (r >= kCols ? up_shift : 0) + k;
          if constexpr (kVec) raw[u][r] = in ? load_weight16(src, p.l2_evict_first, l2_policy) : make_uint4(0, 0, 0, 0);
          else raw[u][r] = in ? *src : Raw{};
          if constexpr (kFp8) sc[u][r] = in ? s_e[soff[r] + sk] : 0.f;
        }
      }
    };
    // The FMAs of one iteration against the staged x.
    auto compute = [&](int base) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int kk = base + u * kStep + lane * V;
        if (kk >= kc) continue;
        if constexpr (kVec) {
          const int j = kk / V;
#pragma unroll
          for (int g = 0; g < G; ++g) {
            float wf[kRowsW][4];
#pragma unroll
            for (int r = 0; r < kRowsW; ++r) {
              WVec<TW>::group(raw[u][r], g, wf[r]);
              if constexpr (kFp8)
#pragma unroll
                for (int i = 0; i < 4; ++i) wf[r][i] *= sc[u][r];
            }
            const float* xg = xs + g * (kc_stride / G) + 4 * j;
#pragma unroll
            for (int m = 0; m < BM; ++m) {
              if (m >= rows) break;
              const float4 xv = *reinterpret_cast<const float4*>(xg + m * kc_stride);
#pragma unroll
              for (int r = 0; r < kRowsW; ++r) {
                float a = acc[m][r];
                a = fmaf(wf[r][0], xv.x, a);
                a = fmaf(wf[r][1], xv.y, a);
                a = fmaf(wf[r][2], xv.z, a);
                acc[m][r] = fmaf(wf[r][3], xv.w, a);
              }
            }
          }
        } else {
          float wf[kRowsW];
#pragma unroll
          for (int r = 0; r < kRowsW; ++r) {
            wf[r] = wval(raw[u][r]);
            if constexpr (kFp8) wf[r] *= sc[u][r];
          }
#pragma unroll
          for (int m = 0; m < BM; ++m) {
            if (m >= rows) break;
            const float xv = xs[m * kc_stride + kk];
#pragma unroll
            for (int r = 0; r < kRowsW; ++r) acc[m][r] = fmaf(wf[r], xv, acc[m][r]);
          }
        }
      }
    };

    if (active) load(0);  // the first weights are in flight while x is staged
    __syncthreads();      // every warp is done with the previous chunk's x
    for (int m = 0; m < rows; ++m) {
      const TX* xr = x + x_row[m] * p.x_ld + c0;
      float* xm = xs + m * kc_stride;
      for (int kk = tid; kk < kc; kk += kThreads) xm[x_slot<XV>(kk, kc_stride)] = ld(xr, kk);
    }
    __syncthreads();
    if (active) {
      for (int base = 0; base < kc; base += kIter) {  // warp-uniform trip count
        compute(base);
        if (base + kIter < kc) load(base + kIter);
      }
    }
  }

  if (!active) return;  // warp-uniform, after the last barrier
  constexpr float kOutScale = kFp8 ? 1.f / 256.f : 1.f;  // fp8 weights were decoded times 256
  TO* out = static_cast<TO*>(p.out);
  if constexpr (kSwiGLU) {
#pragma unroll
    for (int m = 0; m < BM; ++m) {
      if (m >= rows) break;  // block-uniform
#pragma unroll
      for (int r = 0; r < kCols; ++r) {
        // g and u as the plain GEMM would store them, then SILU_MUL's arithmetic.
        const float g = round_to<TO>(warp_sum(acc[m][r]) * kOutScale);
        const float u = round_to<TO>(warp_sum(acc[m][r + kCols]) * kOutScale);
        if (rv[r] && lane == (m * kCols + r) % kWarpSize)
          out[out_row[m] * p.out_ld + n0 + r] = cvt<TO>(silu_times(g, u));
      }
    }
  } else {
#pragma unroll
    for (int m = 0; m < BM; ++m) {
      if (m >= rows) break;  // block-uniform
#pragma unroll
      for (int r = 0; r < kRowsW; ++r) {
        const float v = warp_sum(acc[m][r]);  // every lane of the warp gets the sum
        const int64_t n = n0 + r;
        if (rv[r] && lane == (m * kRowsW + r) % kWarpSize)
          out[out_row[m] * p.out_ld + n] = cvt<TO>(v * kOutScale + (p.bias ? p.bias[n] : 0.f));
      }
    }
  }
}

template <class TX, class TW, class TO, int BM>
void launch_bm(const GroupedGemmParams& p, const GatherRows& gr, bool vec, Stream& s) {
  const int64_t tiles = p.expert_offsets || gr.ids ? grouped_tile_bound(p.rows, p.num_experts, BM) : (p.rows + BM - 1) / BM;
  const int64_t slices = (p.N + kSliceOf<TW> - 1) / kSliceOf<TW>;  // SwiGLU: N / 2 columns, half per block
  if (tiles <= 0 || slices <= 0) return;
  if (tiles > 0x7fffffff || slices > 65535) fail("grouped gemv: problem too large for the grid");
  const dim3 grid{unsigned(tiles), unsigned(slices)};
  GroupedGemmParams q = p;
  q.l2_evict_first = l2_evict_first();
  if (gr.swiglu) {
    // Only gather mode with out in the activation dtype takes the epilogue (moe_gemv_gather).
    if constexpr (std::is_same_v<TO, TX>) {
      if (vec) launch_programmatic(s, grouped_gemv_kernel<TX, TW, TO, BM, true, true>, grid, dim3(kThreads), 0, q, gr);
      else launch_programmatic(s, grouped_gemv_kernel<TX, TW, TO, BM, false, true>, grid, dim3(kThreads), 0, q, gr);
    } else {
      fail("grouped gemv: the SwiGLU epilogue writes the activation dtype");
    }
  } else if (vec) {
    launch_programmatic(s, grouped_gemv_kernel<TX, TW, TO, BM, true, false>, grid, dim3(kThreads), 0, q, gr);
  } else {
    launch_programmatic(s, grouped_gemv_kernel<TX, TW, TO, BM, false, false>, grid, dim3(kThreads), 0, q, gr);
  }
  check_launch("grouped_gemv");
}

template <class TX, class TW, class TO>
void launch_typed(const GroupedGemmParams& p, const GatherRows& gr, Stream& s) {
  constexpr bool kFp8 = std::is_same_v<TW, uint8_t>;
  constexpr int64_t ws = int64_t(sizeof(TW)), V = WVec<TW>::V;
  const bool vec = aligned16(p.w) && (p.w_ld * ws) % 16 == 0 && (p.w_es * ws) % 16 == 0 && p.K % V == 0 &&
                   (!kFp8 || p.block_k % 16 == 0);
  // Tile height: up to 8 rows (fp8: 4, to stay within the 80 registers of 3 blocks per SM; at
  // decode an expert rarely has more rows, and the extra tiles read W from L2). In gather mode an
  // expert gets at most one row per token (a router picks k distinct experts), so T tokens need
  // tiles of T rows: at batch 1 the 1-row tile, whose few registers keep Qwen3-30B-A3B's 384
  // gate_up blocks in one wave (the 8-row tile's registers allowed 2 blocks per SM: 1.45 waves).
  // An expert with more rows than that (ids that repeat within a token) just gets more tiles.
  const int64_t rows = gr.ids ? std::min<int64_t>(p.rows, gr.n / gr.k) : p.rows;
  if (rows <= 1) launch_bm<TX, TW, TO, 1>(p, gr, vec, s);
  else if (rows <= 2) launch_bm<TX, TW, TO, 2>(p, gr, vec, s);
  else if (kFp8 || rows <= 4) launch_bm<TX, TW, TO, 4>(p, gr, vec, s);
  else if constexpr (!kFp8) launch_bm<TX, TW, TO, 8>(p, gr, vec, s);
}

void launch_gemv(const GroupedGemmParams& p, const GatherRows& gr, Stream& s) {
  if (p.rows <= 0 || p.N <= 0) return;
  if (p.w_t == DType::F8E4M3 && (!p.scale || p.block_n <= 0 || p.block_k <= 0))
    fail("grouped gemv: fp8 weights need scales and positive block sizes");
  if (p.K >= (int64_t(1) << 31) || p.N >= (int64_t(1) << 31)) fail("grouped gemv: N and K must be below 2^31");
  dispatch_float(p.x_t, [&](auto tx) {
    using TX = typename decltype(tx)::type;
    dispatch_weight(p.w_t, [&](auto tw) {
      using TW = typename decltype(tw)::type;
      if (p.out_t == p.x_t) {
        launch_typed<TX, TW, TX>(p, gr, s);
      } else if constexpr (std::is_same_v<TW, uint8_t> && !std::is_same_v<TX, float>) {
        if (p.out_t != DType::F32) fail("grouped gemv: output dtype must be the activation dtype or f32");
        launch_typed<TX, TW, float>(p, gr, s);
      } else {
        fail("grouped gemv: output dtype must be the activation dtype");
      }
    });
  });
}

// Gather mode: rows are the T*k assignments of topk_ids, x holds the T token rows. Always this
// kernel (no other MOE_GEMM kernel has the mode), whatever the rows per expert.
void moe_gemv_gather(const MoeGemmArgs& a, Stream& s) {
  const int64_t T = a.topk_ids.size(0), k = a.topk_ids.size(1), E = a.w.size(0), N = a.w.size(1), K = a.w.size(2);
  if (a.topk_ids.dtype != DType::I32 || a.topk_ids.ndim != 2) fail("moe_gemm (gather): topk_ids must be [T, k] i32");
  if (a.x.size(0) != T || a.x.size(1) != K || a.out.size(0) != T * k || a.out.size(1) != (a.swiglu ? N / 2 : N))
    fail("moe_gemm (gather): shapes of x [T, K], W [E, N, K], out [T*k, N] ([T*k, N/2] with SwiGLU) disagree");
  if (a.swiglu && (N % 2 != 0 || a.out.dtype != a.x.dtype))
    fail("moe_gemm (gather, SwiGLU): N must be even and out in the activation dtype");
  if (T == 0 || k == 0 || E == 0 || N == 0) return;
  if (E > kXFloats || T * k > 0x7fffffff) fail("moe_gemm (gather): too many experts or rows");
  GroupedGemmParams p = moe_gemm_io_params(a, "moe_gemm (gather)");  // expert_offsets stays null:
  p.rows = T * k;                                                    // the rows come from gr
  GatherRows gr;
  gr.ids = a.topk_ids.ptr<int32_t>();
  gr.s0 = a.topk_ids.strides[0];
  gr.s1 = a.topk_ids.strides[1];
  gr.k = int(k);
  gr.n = T * k;
  gr.swiglu = a.swiglu;
  launch_gemv(p, gr, s);
}

// PORTLLM_MOE_SWIGLU=0 declines the SwiGLU epilogue: ops::moe_experts then runs the plain gather
// GEMM and MOE_DOWN_COMBINE evaluates the SwiGLU (A/B measurements).
bool swiglu_epilogue_on() {
  static const bool on = env_switch("PORTLLM_MOE_SWIGLU", {"0", "1"}, 1) == 1;
  return on;
}

void moe_gemv(const MoeGemmArgs& a, Stream& s) {
  if (a.topk_ids.defined()) return moe_gemv_gather(a, s);
  const int64_t R = a.x.size(0), E = a.w.size(0);
  if (R == 0 || E == 0 || a.w.size(1) == 0) return;
  if (R > kMaxRows && R > kMaxRowsPerExpert * E) return next_moe_gemm_kernel(a, s, kName, kPriority).run(&a, s);
  launch_gemv(moe_gemm_params(a), GatherRows{}, s);
}

bool moe_gemv_supports(const OpDesc& d, const DeviceCaps&) {
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  const bool gather = d.flags & 1u;  // gather mode counts assignments per expert in the x staging area
  const bool swiglu = d.flags & 2u;  // gather mode only, N even
  if (swiglu && (!gather || d.dim[1] % 2 != 0 || !swiglu_epilogue_on())) return false;
  return (d.flags & ~3u) == 0 && (!gather || d.dim[0] <= kXFloats) && is_gpu_float(x) && o == x && (is_gpu_float(w) || w == DType::F8E4M3) &&
         d.dim[1] < (int64_t(1) << 31) && d.dim[2] < (int64_t(1) << 31) &&
         d.dim[1] <= int64_t(65535) * kSliceOf<uint8_t>;  // the narrowest slice
}
}  // namespace

void launch_grouped_gemv(const GroupedGemmParams& p, Stream& s) { launch_gemv(p, GatherRows{}, s); }

void register_moe_gemv_kernels() {
  register_kernel<MoeGemmArgs>(Op::MOE_GEMM, kKind, kName, kPriority, moe_gemv_supports, moe_gemv);
}

}  // namespace portllm::gpu
