// MLA_ATTENTION on NVIDIA tensor cores (sm_80+): absorbed multi-head latent attention over the
// paged latent cache, one block row per query token, bf16/f16 query and cache. Decode is its
// design point; a prefill token is served the same way, attending to its causal prefix (a block
// finds its token's sequence by a search of query_start_loc), so a prompt's latent rows are read
// once per token, from L2: far from a prefill kernel's reuse, but ~20x the scalar kernel's rate.
// NVIDIA-only fast path (inline PTX: mma.sync, ldmatrix, cp.async), ARCHITECTURE.md rule 4; its
// portable sibling is mla_attention.cu, which MUSA builds and which this kernel falls back to for
// what it does not take (f32 or mixed dtypes, other latent widths, unaligned views).
// Semantics: ops/op_args_moe.h (MlaAttentionArgs); oracle: ops/ref/mla_ref.cpp.
//
// Every head attends to the same latent row [c (Dc) | k_pe (Dr)] (576 values for DeepSeek), and
// V is the c half of that same row, so the 16 heads of a decode token are the M rows of an
// m16n8k16 tile and one tile of latent rows in shared memory serves both products.
// One block of 4 warps per (16-head group, query token, split). Per 32-key tile:
//   1. the tile is gathered through the block table into shared memory with cp.async, STAGES-1
//      tiles ahead of the one being computed (rows padded by 8 values: conflict-free ldmatrix).
//      STAGES = 2 (93 KB of shared memory at 576-wide rows, two blocks per SM on sm_90); 3 stages
//      with one block per SM measured slower on the H200 (55.7 vs 40.8 us at batch 64, 1k);
//   2. S = Q K^T with the warps splitting the Dc + Dr dims (k-steps w, w+4, ...): each warp keeps
//      its Q fragments in registers for the whole split (<= 9 k-steps, 36 registers) and computes
//      a partial S for all 32 keys; the 4 partials are summed through shared memory in a fixed
//      order, so every warp holds the same full S (no cross-warp softmax exchange);
//   3. online softmax (base 2, scale * log2(e) applied to S in f32), done identically by each warp;
//   4. O += P V with the warps splitting the Dc output dims (Dc / 4 each: 128 dims x 16 rows =
//      64 f32 accumulators per thread at DeepSeek's 512); P's accumulator fragments are the A
//      fragments of the product, V's B fragments come from the same tile by ldmatrix.trans.
// Two block barriers per tile (tile landed; S partials written). Since all warps share the
// running max and sum, each warp writes its own output dims with no final merge.
//
// Split-KV and graph-safe planning as in mla_attention.cu: the host plans the grid from the batch
// size, the head count and the max_seq_len bound only, never from per-step host data; each
// sequence's context is divided among the splits on the device (split_chunk: an equal share of
// whole tiles, at least min_keys keys), so one captured grid is right for every context length.
// A split without keys exits at once and writes nothing; the combine kernel computes the same
// chunk and reads only the splits that got keys (partials in f32, max in base 2).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "backends/gpu/mla_common.h"
#include "ops/op_args_moe.h"
#include "ops/registry.h"
#if !defined(PORTLLM_GPU_MUSA)
#include "backends/gpu/mma_sm80.cuh"
#endif

namespace portllm::gpu {

#if !defined(PORTLLM_GPU_MUSA)
namespace {
using namespace sm80;
constexpr int kRows = 16;                      // heads per block (the MMA's M)
constexpr int kKeys = 32;                      // keys per tile
constexpr int kWarps = 4, kThreads = kWarps * 32;
constexpr int kMaxW = 576;                     // Dc + Dr (DeepSeek: 512 + 64)
constexpr int kMaxDc = 512;
constexpr int kKsPerWarp = kMaxW / 16 / kWarps;  // S k-steps per warp: Q fragments in registers
constexpr int kNtS = kKeys / 8;                // n8 tiles of S per tile
constexpr int kNtO = kMaxDc / kWarps / 8;      // n8 tiles of O per warp
constexpr int kCopyThreadsPerRow = 8;          // a tile row is copied by 8 threads (128 bytes a round)
constexpr int kCopyRows = kThreads / kCopyThreadsPerRow;  // rows per copy pass
constexpr int kCopyPasses = kKeys / kCopyRows;
constexpr int kCopyVecs = kMaxW / 8 / kCopyThreadsPerRow;  // 16-byte vectors per thread per row
constexpr int kMaxSplits = 256;
constexpr int kDefaultSplitKeys = 64;          // no split is given fewer keys (two tiles)
constexpr int kSBytes = kWarps * kNtS * 32 * 16;  // S partials: [warp][n8 tile][lane] float4
constexpr float kLog2e = 1.4426950408889634f;
static_assert(kKeys % kCopyRows == 0, "copy passes cover a tile");
static_assert((kMaxW / 8) % kCopyThreadsPerRow == 0, "copy vectors split evenly at the widest row");

struct MlaMmaParams : MlaViews {
  int qs_bytes;  // shared bytes of the Q staging area (reused for the S partials)
  float sl2;     // scale * log2(e)
  int splits, min_keys;
  int B;           // sequences (query_start_loc has B + 1 entries)
  float* part_o;   // [T, H, splits, Dc]
  float* part_ml;  // [T, H, splits, 2]: (max in base 2, sum)
};

// The query token t's sequence and causal context: the block of a token finds its sequence by a
// binary search of query_start_loc (the largest b with qsl[b] <= t), and attends to the keys up
// to its own position. False for a token past the batch's (graph padding rows).
__device__ __forceinline__ bool token_context(const MlaMmaParams& p, int t, int& b, int& ctx) {
  if (t >= p.qsl[p.B]) return false;
  int lo = 0, hi = p.B - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (p.qsl[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  b = lo;
  ctx = p.seq_lens[b] - (p.qsl[b + 1] - 1 - t);  // seq_len - q_len + (t - qsl[b]) + 1
  return true;
}

int row_ld(int W) { return W + 8; }  // padded row: 16-byte aligned, odd count of 16-byte units
int qs_bytes(int W) { return std::max(kRows * row_ld(W) * 2, kSBytes); }
size_t smem_bytes(int W, int stages) { return size_t(qs_bytes(W)) + size_t(stages) * kKeys * row_ld(W) * 2; }

// Keys per split for a context of ctx keys: an equal share, at least min_keys, in whole tiles.
// splits * chunk >= ctx, so the splits cover the context whatever the host planned.
__device__ __forceinline__ int split_chunk(int ctx, int splits, int min_keys) {
  const int c = max((ctx + splits - 1) / splits, min_keys);
  return (c + kKeys - 1) / kKeys * kKeys;
}

template <class T, int STAGES>
__global__ void __launch_bounds__(kThreads, 1) mla_decode_mma_kernel(MlaMmaParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const int h0 = blockIdx.x * kRows, qrow = blockIdx.y, split = blockIdx.z;
  int b, ctx;
  if (!token_context(p, qrow, b, ctx)) return;
  const int chunk = split_chunk(ctx, p.splits, p.min_keys);
  const int start = split * chunk;
  if (p.splits > 1 && start >= ctx) return;  // no keys: the combine does not read this split
  const int end = min(ctx, start + chunk);
  const int n_tiles = max(0, (end - start + kKeys - 1) / kKeys);
  const int nh = min(kRows, p.H - h0);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int Dc = p.Dc, W = Dc + p.Dr, LD = W + 8, VPR = W / 8, nks = W / 16;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);             // [kRows][LD], until Q is in registers
  float4* sS = reinterpret_cast<float4*>(smem_raw);   // then: S partials [kWarps][kNtS][32]
  T* sKV = reinterpret_cast<T*>(smem_raw + p.qs_bytes);  // STAGES tiles of [kKeys][LD]
  const T* ql = static_cast<const T*>(p.q_lat);
  const T* qp = static_cast<const T*>(p.q_pe);
  const T* cache = static_cast<const T*>(p.cache);
  const int32_t* bt = p.block_tables + int64_t(b) * p.bt_s0;

  // Q rows [q_latent | q_pe] of the group's heads; rows past the head count are zero (their
  // scores are finite and never written out).
  for (int i = tid; i < kRows * VPR; i += kThreads) {
    const int r = i / VPR, c = (i % VPR) * 8;
    const T* src = ql;
    if (r < nh)
      src = c < Dc ? ql + int64_t(qrow) * p.ql_s0 + int64_t(h0 + r) * p.ql_s1 + c
                   : qp + int64_t(qrow) * p.qp_s0 + int64_t(h0 + r) * p.qp_s1 + (c - Dc);
    cp_async16(sQ + r * LD + c, src, r < nh ? 16 : 0);
  }
  cp_async_commit();

  // This thread copies rows crow + kCopyRows * i of every tile, 16-byte vectors cvec + 8 j.
  // Element offsets of those rows for the next tile to issue are looked up one tile ahead, so the
  // block-table read is off the issue path; -1 = past the split (zero-filled).
  const int crow = tid / kCopyThreadsPerRow, cvec = tid % kCopyThreadsPerRow;
  auto row_offsets = [&](int t, int64_t (&off)[kCopyPasses]) {
#pragma unroll
    for (int i = 0; i < kCopyPasses; ++i) {
      const int pos = start + t * kKeys + crow + i * kCopyRows;
      off[i] = -1;
      if (t < n_tiles && pos < end)
        off[i] = int64_t(__ldg(bt + pos / p.page)) * p.c_s0 + int64_t(pos % p.page) * p.c_s1;
    }
  };
  auto issue = [&](int t, const int64_t (&off)[kCopyPasses]) {
    T* dst = sKV + size_t(t % STAGES) * kKeys * LD;
#pragma unroll
    for (int i = 0; i < kCopyPasses; ++i) {
      const int r = crow + i * kCopyRows;
      const T* src = cache + max(off[i], int64_t(0));
#pragma unroll
      for (int j = 0; j < kCopyVecs; ++j) {
        const int c = (cvec + j * kCopyThreadsPerRow) * 8;
        if (c < W) cp_async16(dst + r * LD + c, src + c, off[i] >= 0 ? 16 : 0);
      }
    }
  };

  int64_t off[kCopyPasses];
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < n_tiles) {
      row_offsets(st, off);
      issue(st, off);
    }
    cp_async_commit();
  }
  row_offsets(STAGES - 1, off);
  cp_async_wait<STAGES - 1>();  // this thread's Q copies (the oldest group)
  __syncthreads();              // everyone's

  uint32_t qf[kKsPerWarp][4];
#pragma unroll
  for (int j = 0; j < kKsPerWarp; ++j) {
    const int ks = warp + j * kWarps;
    if (ks < nks) ldsm_x4(qf[j], sQ + (lane % 16) * LD + ks * 16 + (lane / 16) * 8);
    else qf[j][0] = qf[j][1] = qf[j][2] = qf[j][3] = 0u;
  }

  float o[kNtO][4];
#pragma unroll
  for (int i = 0; i < kNtO; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;  // rows lane/4 and lane/4 + 8
  const int ndt2 = Dc / (kWarps * 16);  // pairs of O n8 tiles per warp
  const int dbase = warp * (Dc / kWarps);

  for (int t = 0; t < n_tiles; ++t) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile t
    // Everyone's copies of tile t are visible; everyone is done with tile t - 1 (whose buffer the
    // next issue refills) and with the S partials (and, the first time, with sQ).
    __syncthreads();
    if (t + STAGES - 1 < n_tiles) issue(t + STAGES - 1, off);
    cp_async_commit();  // possibly empty: keeps "all but the newest STAGES - 2 groups" = tile t
    row_offsets(t + STAGES, off);
    const T* sK = sKV + size_t(t % STAGES) * kKeys * LD;
    const int kt = start + t * kKeys;

    float s[kNtS][4];
#pragma unroll
    for (int i = 0; i < kNtS; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
    for (int j = 0; j < kKsPerWarp; ++j) {
      const int ks = warp + j * kWarps;
      if (ks < nks) {
#pragma unroll
        for (int half = 0; half < kNtS / 2; ++half) {
          uint32_t kb[4];
          ldsm_x4(kb, sK + (half * 16 + lane % 8 + (lane / 16) * 8) * LD + ks * 16 + ((lane / 8) % 2) * 8);
          Mma<T>::run(s[2 * half], qf[j], kb[0], kb[1]);
          Mma<T>::run(s[2 * half + 1], qf[j], kb[2], kb[3]);
        }
      }
    }
#pragma unroll
    for (int nt = 0; nt < kNtS; ++nt) sS[(warp * kNtS + nt) * 32 + lane] = make_float4(s[nt][0], s[nt][1], s[nt][2], s[nt][3]);
    __syncthreads();
    // Every warp sums the partials in the same order: the same S, max and sum in all of them.
#pragma unroll
    for (int nt = 0; nt < kNtS; ++nt) {
      float4 v = sS[nt * 32 + lane];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) {
        const float4 u = sS[(w * kNtS + nt) * 32 + lane];
        v.x += u.x;
        v.y += u.y;
        v.z += u.z;
        v.w += u.w;
      }
      s[nt][0] = v.x;
      s[nt][1] = v.y;
      s[nt][2] = v.z;
      s[nt][3] = v.w;
    }

    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < kNtS; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int kpos = kt + nt * 8 + (lane % 4) * 2 + (e & 1);
        const float v = kpos < end ? s[nt][e] * p.sl2 : -INFINITY;
        s[nt][e] = v;
        if (e < 2) mx0 = fmaxf(mx0, v);
        else mx1 = fmaxf(mx1, v);
      }
    mx0 = quad_max(mx0);
    mx1 = quad_max(mx1);
    const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);  // finite: key kt is valid
    const float alpha0 = exp2f(m0 - mn0), alpha1 = exp2f(m1 - mn1);
    float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
    for (int nt = 0; nt < kNtS; ++nt) {
      s[nt][0] = exp2f(s[nt][0] - mn0);
      s[nt][1] = exp2f(s[nt][1] - mn0);
      s[nt][2] = exp2f(s[nt][2] - mn1);
      s[nt][3] = exp2f(s[nt][3] - mn1);
      sum0 += s[nt][0] + s[nt][1];
      sum1 += s[nt][2] + s[nt][3];
    }
    l0 = l0 * alpha0 + sum0;  // per-thread partial sums; the quad is reduced once at the end
    l1 = l1 * alpha1 + sum1;
    m0 = mn0;
    m1 = mn1;
#pragma unroll
    for (int i = 0; i < kNtO; ++i) {
      o[i][0] *= alpha0;
      o[i][1] *= alpha0;
      o[i][2] *= alpha1;
      o[i][3] *= alpha1;
    }
#pragma unroll
    for (int k2 = 0; k2 < kNtS / 2; ++k2) {  // 16 keys per k-step of P V
      uint32_t a[4];  // P's accumulator fragments are the A fragments of P V
      a[0] = Mma<T>::pack(s[2 * k2][0], s[2 * k2][1]);
      a[1] = Mma<T>::pack(s[2 * k2][2], s[2 * k2][3]);
      a[2] = Mma<T>::pack(s[2 * k2 + 1][0], s[2 * k2 + 1][1]);
      a[3] = Mma<T>::pack(s[2 * k2 + 1][2], s[2 * k2 + 1][3]);
      const T* sV = sK + (k2 * 16 + lane % 8 + ((lane / 8) % 2) * 8) * LD + dbase + (lane / 16) * 8;
#pragma unroll
      for (int d2 = 0; d2 < kNtO / 2; ++d2)
        if (d2 < ndt2) {
          uint32_t vb[4];
          ldsm_x4_trans(vb, sV + d2 * 16);
          Mma<T>::run(o[2 * d2], a, vb[0], vb[1]);
          Mma<T>::run(o[2 * d2 + 1], a, vb[2], vb[3]);
        }
    }
  }
  cp_async_wait<0>();
  l0 = quad_sum(l0);
  l1 = quad_sum(l1);

  const int r0 = lane / 4;
  const float ls[2] = {l0, l1}, ms[2] = {m0, m1};
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int row = r0 + 8 * hr;
    if (row >= nh) continue;
    const int h = h0 + row;
    if (p.splits == 1) {
      const float inv = ls[hr] > 0.f ? 1.f / ls[hr] : 0.f;  // no keys (empty context): zeros
      T* orow = static_cast<T*>(p.out) + int64_t(qrow) * p.o_s0 + int64_t(h) * p.o_s1 + dbase + (lane % 4) * 2;
#pragma unroll
      for (int i = 0; i < kNtO; ++i)
        if (i < 2 * ndt2)
          *reinterpret_cast<uint32_t*>(orow + i * 8) = Mma<T>::pack(o[i][2 * hr] * inv, o[i][2 * hr + 1] * inv);
    } else {
      const int64_t prow = (int64_t(qrow) * p.H + h) * p.splits + split;
      float* po = p.part_o + prow * Dc + dbase + (lane % 4) * 2;
#pragma unroll
      for (int i = 0; i < kNtO; ++i)
        if (i < 2 * ndt2) *reinterpret_cast<float2*>(po + i * 8) = make_float2(o[i][2 * hr], o[i][2 * hr + 1]);
      if (warp == 0 && lane % 4 == 0) {
        p.part_ml[prow * 2] = ms[hr];
        p.part_ml[prow * 2 + 1] = ls[hr];
      }
    }
  }
#endif
}

// Merges the splits of one (sequence, head) row, 128 output dims per block of one warp: grid
// (H * ceil(Dc / 128), B). Only the splits that got keys (the same split_chunk as the main
// kernel) are read; their loads need no branch, so the unrolled loop keeps several in flight.
template <class T>
__global__ void __launch_bounds__(32) mla_decode_combine_kernel(MlaMmaParams p) {
  const int nchunks = (p.Dc + 127) / 128;
  const int h = blockIdx.x / nchunks, dchunk = blockIdx.x % nchunks, qrow = blockIdx.y, lane = threadIdx.x;
  int b, ctx;
  if (!token_context(p, qrow, b, ctx)) return;
  const int chunk = split_chunk(ctx, p.splits, p.min_keys);
  const int n_act = ctx > 0 ? min(p.splits, (ctx + chunk - 1) / chunk) : 0;
  const int64_t base = (int64_t(qrow) * p.H + h) * p.splits;
  __shared__ float s_w[kMaxSplits];
  float mx = -INFINITY;
  for (int s = lane; s < n_act; s += 32) mx = fmaxf(mx, p.part_ml[(base + s) * 2]);
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, m));
  float lsum = 0.f;
  for (int s = lane; s < n_act; s += 32) {
    const float w = exp2f(p.part_ml[(base + s) * 2] - mx);
    s_w[s] = w;
    lsum += p.part_ml[(base + s) * 2 + 1] * w;
  }
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) lsum += __shfl_xor_sync(0xffffffffu, lsum, m);
  __syncwarp();
  const float inv = lsum > 0.f ? 1.f / lsum : 0.f;
  const int d = dchunk * 128 + lane * 4;
  if (d >= p.Dc) return;
  const float4* src = reinterpret_cast<const float4*>(p.part_o + base * p.Dc + d);
  const int stride = p.Dc / 4;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
  for (int s = 0; s < n_act; ++s) {
    const float4 v = src[int64_t(s) * stride];
    const float w = s_w[s];
    acc.x += v.x * w;
    acc.y += v.y * w;
    acc.z += v.z * w;
    acc.w += v.w * w;
  }
  T* orow = static_cast<T*>(p.out) + int64_t(qrow) * p.o_s0 + int64_t(h) * p.o_s1 + d;
  *reinterpret_cast<uint2*>(orow) = make_uint2(Mma<T>::pack(acc.x * inv, acc.y * inv), Mma<T>::pack(acc.z * inv, acc.w * inv));
}

// Tuning knobs for `ops perf` (read once): PORTLLM_MLA_SPLIT_KEYS (least keys per split, default
// 64) and PORTLLM_MLA_STAGES (2 or 3 tiles in shared memory, default 2; 3 where it fits).
struct Tuning {
  int split_keys = kDefaultSplitKeys;
  int stages = 2;
};
const Tuning& tuning() {
  static const Tuning t = [] {
    Tuning r;
    if (const char* e = std::getenv("PORTLLM_MLA_SPLIT_KEYS"); e && std::atoi(e) > 0) r.split_keys = std::atoi(e);
    if (const char* e = std::getenv("PORTLLM_MLA_STAGES"); e && (std::atoi(e) == 2 || std::atoi(e) == 3))
      r.stages = std::atoi(e);
    return r;
  }();
  return t;
}

size_t smem_limit(const DeviceCaps& c) { return std::max(c.shared_mem_per_block, c.shared_mem_per_block_optin); }

// 16-byte copies of q and cache rows, 4-byte (pairs) and 8-byte output stores, one dtype.
bool views_ok(const MlaAttentionArgs& a) {
  const Tensor &ql = a.q_latent, &qp = a.q_pe, &o = a.out, &c = a.latent_cache;
  if (qp.dtype != ql.dtype || o.dtype != ql.dtype || c.dtype != ql.dtype) return false;
  if (ql.ndim != 3 || qp.ndim != 3 || o.ndim != 3 || c.ndim != 4 || c.size(3) < ql.size(2) + qp.size(2)) return false;
  if (ql.strides[2] != 1 || qp.strides[2] != 1 || o.strides[2] != 1 || c.strides[3] != 1) return false;
  if (!aligned16(ql.data) || !aligned16(qp.data) || !aligned16(o.data) || !aligned16(c.data)) return false;
  for (int64_t st : {ql.strides[0], ql.strides[1], qp.strides[0], qp.strides[1], o.strides[0], o.strides[1],
                     c.strides[0], c.strides[1]})
    if (st % 8 != 0) return false;
  return true;
}

template <class T, int STAGES>
void launch(const MlaMmaParams& p, int tokens, size_t smem, gpuStream_t st) {
  (void)gpuFuncSetAttribute(mla_decode_mma_kernel<T, STAGES>, gpuFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  const dim3 grid(unsigned((p.H + kRows - 1) / kRows), unsigned(tokens), unsigned(p.splits));
  mla_decode_mma_kernel<T, STAGES><<<grid, kThreads, smem, st>>>(p);
  if (p.splits > 1) {
    const dim3 cgrid(unsigned(p.H * ((p.Dc + 127) / 128)), unsigned(tokens));
    mla_decode_combine_kernel<T><<<cgrid, 32, 0, st>>>(p);
  }
}

void mla_decode_mma(const MlaAttentionArgs& a, Stream& s) {
  const int B = int(a.seq_lens.size(0)), tokens = int(a.q_latent.size(0));
  if (B == 0 || tokens == 0) return;
  if (!views_ok(a) || tokens > 65535) return mla_attention_portable(a, s);  // grid.y holds the tokens
  MlaMmaParams p{};
  fill_mla_views(p, a);
  p.sl2 = a.scale * kLog2e;
  p.B = B;
  const int W = p.Dc + p.Dr;
  p.qs_bytes = qs_bytes(W);

  const DeviceCaps& caps = caps_of(s);
  const size_t limit = smem_limit(caps);
  int stages = tuning().stages;
  if (smem_bytes(W, stages) > limit) stages = 2;  // supports() checked that 2 fit
  const size_t smem = smem_bytes(W, stages);

  // Graph-safe split planning (see the top of the file): from the batch, the head groups and the
  // max_seq_len bound only. As many splits as fill the device once (blocks resident per compute
  // unit from shared memory: 2 at 2 stages of DeepSeek's 576-wide rows on sm_90, 1 at 3 stages),
  // no more than min_keys-key chunks of max_seq_len (64: 2 tiles; 32 and 128 measured no better
  // at batch 1, 256 twice as slow).
  const int blocks = tokens * ((p.H + kRows - 1) / kRows);
  const int per_cu = std::max(1, int((limit + 1024) / (smem + 1024)));
  const int want = std::max(1, per_cu * caps.num_compute_units / blocks);
  p.min_keys = std::max(tuning().split_keys, 1);
  const int max_ctx = std::max(a.max_seq_len, 1);
  p.splits = std::clamp((max_ctx + p.min_keys - 1) / p.min_keys, 1, std::min(want, kMaxSplits));
  std::shared_ptr<void> ws;
  if (p.splits > 1) {
    const size_t rows = size_t(tokens) * size_t(p.H) * size_t(p.splits);
    ws = scratch(s, rows * (size_t(p.Dc) + 2) * sizeof(float));
    p.part_o = static_cast<float*>(ws.get());
    p.part_ml = p.part_o + rows * size_t(p.Dc);
  }
  const gpuStream_t st = native_stream(s);
  auto go = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (stages == 3) launch<T, 3>(p, tokens, smem, st);
    else launch<T, 2>(p, tokens, smem, st);
  };
  if (a.q_latent.dtype == DType::BF16) go(Tag<gpu_bf16>{});
  else go(Tag<gpu_half>{});
  check_launch("mla_decode_mma");
}

// Decode and prefill, q and cache of one 16-bit dtype (bf16 only with bf16 matrix units),
// Dc a multiple of 64 up to 512, Dr a multiple of 16, Dc + Dr <= 576 (Q fragments in registers),
// two stages of tiles in the device's shared memory, NVIDIA sm_80+. Views are checked in run
// (16-byte aligned rows), which hands anything else to the portable kernel.
bool supports(const OpDesc& d, const DeviceCaps& c) {
  const DType tq = d.dtype[0], tc = d.dtype[2];
  if (tq != tc || (tq != DType::BF16 && tq != DType::F16)) return false;
  if (tq == DType::BF16 && !c.bf16_matmul) return false;
  const int64_t Dc = d.dim[0], page = d.dim[1], H = d.dim[2], Dr = d.dim[3];
  if (Dc <= 0 || Dc % 64 != 0 || Dc > kMaxDc || Dr < 0 || Dr % 16 != 0 || Dc + Dr > kMaxW) return false;
  if (page <= 0 || H <= 0) return false;
  return c.vendor == "nvidia" && c.arch >= 80 && smem_bytes(int(Dc + Dr), 2) <= smem_limit(c);
}
}  // namespace

void register_mla_mma_kernels() {
  register_kernel<MlaAttentionArgs>(Op::MLA_ATTENTION, DeviceKind::CUDA, "gpu.mla_decode_mma_sm80", 20, supports,
                                    mla_decode_mma);
}
#else
void register_mla_mma_kernels() {}  // NVIDIA-only fast path; MUSA uses the portable sibling
#endif

}  // namespace portllm::gpu
