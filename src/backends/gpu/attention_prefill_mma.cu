// ATTN_PREFILL on NVIDIA tensor cores (sm_80+): FlashAttention-2 over the paged cache.
// NVIDIA-only fast path (inline PTX: mma.sync m16n8k16, ldmatrix, cp.async), ARCHITECTURE.md rule 4; its
// portable sibling is the tiled kernel in attention.cu, which MUSA builds and which this kernel
// falls back to for what it does not take (f32, mixed dtypes other than an fp8 cache under
// bf16/f16 queries, head dims other than 64/128/256, K and V head dims that differ, unaligned views).
//
// One block of 4 warps per (query tile, query head, sequence); each warp owns 32 queries (16 at
// head dim 256) as two 16-row MMA tiles, so every K and V fragment read from shared memory feeds
// two MMAs per tile row: ldmatrix bandwidth, not the tensor cores, bounds this kernel. Per 64-key tile, K and V rows are gathered through the block table into shared
// memory by cp.async, double-buffered so the next tile's copy overlaps this tile's math (rows
// padded by 8 values so ldmatrix is conflict-free), S = Q K^T runs on tensor cores
// with f32 accumulation, the online softmax (base 2, ex2.approx; for fp8 caches the score scale
// rides in the converted Q) works on the accumulator fragments in registers, and P (rounded to the input dtype, as FlashAttention does) times V accumulates the
// output in registers. Causal masking per element; key tiles past the tile's last query are
// never loaded.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backends/gpu/attention_common.cuh"
#include "backends/gpu/gpu_kernels.h"
#include "ops/registry.h"
#if !defined(PORTLLM_GPU_MUSA)
#include "backends/gpu/mma_sm80.cuh"
#endif

namespace portllm::gpu {

#if !defined(PORTLLM_GPU_MUSA)
namespace {
using namespace sm80;
constexpr int kBK = 64, kWarps = 4, kThreads = kWarps * 32;
constexpr float kLog2e = 1.4426950408889634f;

// Query rows per warp, in 16-row MMA tiles: two for head dims up to 128 (a K or V fragment read
// from shared memory then feeds twice the MMAs: the kernel is bound by ldmatrix bandwidth, not by
// the tensor cores), one for 256 (its accumulators would not fit twice in registers).
template <int D> constexpr int kMT = D <= 128 ? 2 : 1;
template <int D> constexpr int kBQ = kWarps * 16 * kMT<D>;  // queries per block
template <int D> constexpr int kLd = D + 8;  // padded smem row (elements): 16-byte aligned, no bank conflicts
// An fp8 (e4m3) cache: its tiles are copied as they are (rows of D bytes) and widened to f16 in
// shared memory (widen_fp8_tile, mma_sm80.cuh) for ldmatrix, and the MMAs run in f16 (Q converted
// as it is staged), as in the decode kernel (attention_decode_mma.cu says why).
template <class TC> constexpr bool kFp8 = sizeof(TC) == 1;
template <int D, class TC> constexpr int kStageLd = kFp8<TC> ? D : kLd<D>;  // a copied row, in TC values
template <int D, class TC> constexpr size_t kStageBytes = size_t(2) * kBK * kStageLd<D, TC> * sizeof(TC);  // (K, V)
// Q, 2 x (K, V) tiles as copied, and for fp8 one (K, V) pair widened.
template <int D, class TC = gpu_bf16>
constexpr size_t kSmemBytes = size_t(kBQ<D>) * kLd<D> * 2 + 2 * kStageBytes<D, TC> +
                              (kFp8<TC> ? size_t(2) * kBK * kLd<D> * 2 : 0);

template <class T, class TC, int D>
__global__ void __launch_bounds__(kThreads) attn_prefill_mma_kernel(AttnParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int LD = kLd<D>, VPR = D / 8, MT = kMT<D>, BQ = kBQ<D>;  // VPR: 16-byte vectors per row of Q
  // The cache as copied: 16-byte vectors of EV values, CVPR per row, rows SLD values apart.
  constexpr int EV = 16 / int(sizeof(TC)), CVPR = D / EV, SLD = kStageLd<D, TC>;
  using TM = std::conditional_t<kFp8<TC>, gpu_half, T>;  // the MMAs' dtype
  // Query tiles are the slowest grid dimension, last tile first: under the causal mask the late
  // tiles carry the most keys, so starting them first keeps the tail of the grid short.
  const int b = blockIdx.y, h = blockIdx.x, qt0 = (gridDim.z - 1 - blockIdx.z) * BQ;
  const int q0 = p.qsl[b], q_len = p.qsl[b + 1] - q0, ctx = p.seq_lens[b];
  if (qt0 >= q_len) return;
  const int kh = h / p.group;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int nq = min(BQ, q_len - qt0);
  const int first_pos = ctx - q_len;
  const int num_keys = first_pos + qt0 + nq;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  TM* sQ = reinterpret_cast<TM*>(smem_raw);
  // Buffer buf's K tile as copied (its V tile follows it); for fp8, the widened (K, V) pair.
  auto staged = [&](int buf) {
    return reinterpret_cast<TC*>(smem_raw + size_t(BQ) * LD * 2 + size_t(buf) * kStageBytes<D, TC>);
  };
  TM* s_wide = reinterpret_cast<TM*>(smem_raw + size_t(BQ) * LD * 2 + 2 * kStageBytes<D, TC>);
  const T* q = static_cast<const T*>(p.q);
  // Scores in log2 units: exponentials are 2^x. A converted Q (fp8 caches) carries the scale, so
  // the scores come out of the MMAs scaled; a copied one is scaled per score.
  const float sl2 = p.scale * kLog2e;
  constexpr bool kQScaled = !std::is_same_v<TM, T>;
  const TC* kc = static_cast<const TC*>(p.k_cache);
  const TC* vc = static_cast<const TC*>(p.v_cache);

  // Starts the copy of the key tile at kt into buffer buf; keys past num_keys are zero-filled
  // (masked scores; zero V rows keep P V finite).
  auto issue = [&](int kt, int buf) {
    TC* sK = staged(buf);
    TC* sV = sK + kBK * SLD;
    for (int i = tid; i < kBK * CVPR; i += kThreads) {
      const int r = i / CVPR, c = i % CVPR, pos = kt + r;
      const bool ok = pos < num_keys;
      const int64_t ko = ok ? kv_offset(p, b, pos, p.kc_s0, p.kc_s1, p.kc_s2, kh) : 0;
      const int64_t vo = ok ? kv_offset(p, b, pos, p.vc_s0, p.vc_s1, p.vc_s2, kh) : 0;
      cp_async16(sK + r * SLD + c * EV, kc + ko + c * EV, ok ? 16 : 0);
      cp_async16(sV + r * SLD + c * EV, vc + vo + c * EV, ok ? 16 : 0);
    }
  };
  // The first tile's copies go out before Q is staged, so its round trip overlaps Q's.
  issue(0, 0);
  if constexpr (std::is_same_v<TM, T>) {
    for (int i = tid; i < BQ * VPR; i += kThreads) {
      const int r = i / VPR, cq = i % VPR;
      const int64_t off = r < nq ? int64_t(q0 + qt0 + r) * p.q_s0 + int64_t(h) * p.q_s1 + cq * 8 : 0;
      cp_async16(sQ + r * LD + cq * 8, q + off, r < nq ? 16 : 0);
    }
  } else {  // bf16 q, fp8 cache: scaled, converted to f16 (made visible by the loop's first barrier)
    // Every load is issued before the first conversion: one round trip per thread, not kQVecs.
    // With the loop rolled and the first tile copied after Q, a block started with ~16 round trips
    // in a row, a large share of a short prompt's block. H200, one binary (`ops perf -o
    // ATTN_PREFILL`, Qwen3-8B heads): 16 prompts of 100..898 tokens 307.1 -> 262.2 us, a 4k prompt
    // 658.6 -> 636.0 (bf16 caches, whose Q is a cp.async, unchanged: 263.6 / 262.0, 668.1 / 660.8).
    // Loading the tile rows' block-table entries together before their copies, tried alongside,
    // made bf16 caches slower (4k 667 -> 746 us) and was dropped.
    constexpr int kQVecs = BQ * VPR / kThreads;  // 16-byte vectors of Q per thread
    static_assert(BQ * VPR % kThreads == 0, "whole vectors of Q per thread");
    uint4 qv[kQVecs];
#pragma unroll
    for (int k = 0; k < kQVecs; ++k) {
      const int i = tid + k * kThreads, r = i / VPR, cq = i % VPR;
      const int64_t off = int64_t(q0 + qt0 + r) * p.q_s0 + int64_t(h) * p.q_s1 + cq * 8;
      qv[k] = r < nq ? *reinterpret_cast<const uint4*>(q + off) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int k = 0; k < kQVecs; ++k) {
      const int i = tid + k * kThreads, r = i / VPR, cq = i % VPR;
      *reinterpret_cast<uint4*>(sQ + r * LD + cq * 8) = bf16x8_to_f16x8_satfinite(qv[k], sl2);
    }
  }
  cp_async_commit();

  // Warp w owns query rows 16 MT w .. 16 MT (w + 1) - 1 of the tile; m-tile t of the warp holds
  // rows wrow + 16 t, and this thread's accumulator rows of it are lane / 4 and lane / 4 + 8.
  const int wrow = warp * 16 * MT;
  float o[MT][D / 8][4];
#pragma unroll
  for (int t = 0; t < MT; ++t)
#pragma unroll
    for (int i = 0; i < D / 8; ++i) o[t][i][0] = o[t][i][1] = o[t][i][2] = o[t][i][3] = 0.f;
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int t = 0; t < MT; ++t) m[t][0] = m[t][1] = -INFINITY, l[t][0] = l[t][1] = 0.f;
  const int qpos_base = first_pos + qt0 + wrow + lane / 4;  // row lane / 4 of m-tile 0
  const int warp_first_pos = first_pos + qt0 + wrow, warp_last_pos = warp_first_pos + 16 * MT - 1;

  // Double-buffered: the next tile's copy is in flight while this one is multiplied.
  for (int kt = 0, buf = 0; kt < num_keys; kt += kBK, buf ^= 1) {
    __syncthreads();  // every warp is done with the buffer the next copy overwrites
    if (kt + kBK < num_keys) issue(kt + kBK, buf ^ 1);
    cp_async_commit();  // possibly empty: keeps "all but the newest group" = this tile
    cp_async_wait<1>();
    __syncthreads();  // this tile (and Q), copied by all threads, is visible to all
    const TM* sK;
    if constexpr (kFp8<TC>) {  // every warp widens its share (the top barrier freed s_wide)
      widen_fp8_tile<D, 2 * kBK, kThreads>(s_wide, reinterpret_cast<const uint8_t*>(staged(buf)), tid);
      __syncthreads();
      sK = s_wide;
    } else {
      sK = staged(buf);
    }
    if (kt > warp_last_pos) continue;  // every key of the tile is in this warp's queries' future
    const TM* sV = sK + kBK * LD;

    // S = Q K^T for the warp's 16 MT queries x 64 keys: each K fragment feeds MT m-tiles.
    float s[MT][kBK / 8][4];
#pragma unroll
    for (int t = 0; t < MT; ++t)
#pragma unroll
      for (int i = 0; i < kBK / 8; ++i) s[t][i][0] = s[t][i][1] = s[t][i][2] = s[t][i][3] = 0.f;
#pragma unroll 2  // not fully: the per-step ldmatrix addresses would spill beside s and o
    for (int kk = 0; kk < D; kk += 16) {
      uint32_t a[MT][4];
#pragma unroll
      for (int t = 0; t < MT; ++t) ldsm_x4(a[t], sQ + (wrow + 16 * t + lane % 16) * LD + kk + (lane / 16) * 8);
#pragma unroll
      for (int n2 = 0; n2 < kBK / 16; ++n2) {
        uint32_t kb[4];
        ldsm_x4(kb, sK + (n2 * 16 + lane % 8 + (lane / 16) * 8) * LD + kk + ((lane / 8) % 2) * 8);
#pragma unroll
        for (int t = 0; t < MT; ++t) {
          Mma<TM>::run(s[t][2 * n2], a[t], kb[0], kb[1]);
          Mma<TM>::run(s[t][2 * n2 + 1], a[t], kb[2], kb[3]);
        }
      }
    }
    // Scale, mask (only a tile that reaches past the warp's first query or past the keys),
    // online softmax over the accumulator fragments.
    const bool masked = kt + kBK - 1 > warp_first_pos || kt + kBK > num_keys;
#pragma unroll
    for (int t = 0; t < MT; ++t) {
      const int qpos0 = qpos_base + 16 * t, qpos1 = qpos0 + 8;
      float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kBK / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float v = kQScaled ? s[t][nt][e] : s[t][nt][e] * sl2;
          if (masked) {
            const int kpos = kt + nt * 8 + (lane % 4) * 2 + (e & 1);
            if (kpos > (e < 2 ? qpos0 : qpos1) || kpos >= num_keys) v = -INFINITY;
          }
          s[t][nt][e] = v;
          if (e < 2) mx0 = fmaxf(mx0, v);
          else mx1 = fmaxf(mx1, v);
        }
      mx0 = quad_max(mx0);
      mx1 = quad_max(mx1);
      const float mn0 = fmaxf(m[t][0], mx0), mn1 = fmaxf(m[t][1], mx1);
      const float base0 = mn0 == -INFINITY ? 0.f : mn0, base1 = mn1 == -INFINITY ? 0.f : mn1;
      const float alpha0 = ex2_ftz(m[t][0] - base0), alpha1 = ex2_ftz(m[t][1] - base1);
      float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
      for (int nt = 0; nt < kBK / 8; ++nt) {
        s[t][nt][0] = ex2_ftz(s[t][nt][0] - base0);
        s[t][nt][1] = ex2_ftz(s[t][nt][1] - base0);
        s[t][nt][2] = ex2_ftz(s[t][nt][2] - base1);
        s[t][nt][3] = ex2_ftz(s[t][nt][3] - base1);
        sum0 += s[t][nt][0] + s[t][nt][1];
        sum1 += s[t][nt][2] + s[t][nt][3];
      }
      l[t][0] = l[t][0] * alpha0 + sum0;  // per-thread partial sums; the quad is reduced once at the end
      l[t][1] = l[t][1] * alpha1 + sum1;
      m[t][0] = mn0;
      m[t][1] = mn1;
#pragma unroll
      for (int i = 0; i < D / 8; ++i) {
        o[t][i][0] *= alpha0;
        o[t][i][1] *= alpha0;
        o[t][i][2] *= alpha1;
        o[t][i][3] *= alpha1;
      }
    }
    // O += P V: P's accumulator fragments are the A fragments of the next MMA; each V fragment
    // feeds MT m-tiles.
#pragma unroll
    for (int k2 = 0; k2 < kBK / 16; ++k2) {
      uint32_t a[MT][4];
#pragma unroll
      for (int t = 0; t < MT; ++t) {
        a[t][0] = Mma<TM>::pack(s[t][2 * k2][0], s[t][2 * k2][1]);
        a[t][1] = Mma<TM>::pack(s[t][2 * k2][2], s[t][2 * k2][3]);
        a[t][2] = Mma<TM>::pack(s[t][2 * k2 + 1][0], s[t][2 * k2 + 1][1]);
        a[t][3] = Mma<TM>::pack(s[t][2 * k2 + 1][2], s[t][2 * k2 + 1][3]);
      }
#pragma unroll
      for (int d2 = 0; d2 < D / 16; ++d2) {
        uint32_t vb[4];
        ldsm_x4_trans(vb, sV + (k2 * 16 + lane % 8 + ((lane / 8) % 2) * 8) * LD + d2 * 16 + (lane / 16) * 8);
#pragma unroll
        for (int t = 0; t < MT; ++t) {
          Mma<TM>::run(o[t][2 * d2], a[t], vb[0], vb[1]);
          Mma<TM>::run(o[t][2 * d2 + 1], a[t], vb[2], vb[3]);
        }
      }
    }
  }
  T* out = static_cast<T*>(p.out);
#pragma unroll
  for (int t = 0; t < MT; ++t) {
    float l0 = l[t][0], l1 = l[t][1];
    l0 = quad_sum(l0);
    l1 = quad_sum(l1);
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = wrow + 16 * t + lane / 4 + half * 8;
      if (r >= nq) continue;
      const float inv = half ? inv1 : inv0;
      T* orow = out + int64_t(q0 + qt0 + r) * p.o_s0 + int64_t(h) * p.o_s1;
#pragma unroll
      for (int i = 0; i < D / 8; ++i) {
        const int d = i * 8 + (lane % 4) * 2;
        *reinterpret_cast<uint32_t*>(orow + d) = Mma<T>::pack(o[t][i][2 * half] * inv, o[t][i][2 * half + 1] * inv);
      }
    }
  }
#endif
}

template <class T, class TC, int D>
void launch(const AttnParams& p, int B, int max_q_len, gpuStream_t st) {
  // Per launch, like the portable kernel: the attribute belongs to the current device, and a
  // prefill launch per layer is not a hot path.
  (void)gpuFuncSetAttribute(attn_prefill_mma_kernel<T, TC, D>, gpuFuncAttributeMaxDynamicSharedMemorySize,
                            int(kSmemBytes<D, TC>));
  const dim3 grid(unsigned(p.Hq), unsigned(B), unsigned((max_q_len + kBQ<D> - 1) / kBQ<D>));
  attn_prefill_mma_kernel<T, TC, D><<<grid, kThreads, kSmemBytes<D, TC>, st>>>(p);
}

void attn_prefill_mma(const AttentionArgs& a, Stream& s) {
  const AttnParams p = params_of(a);
  const int B = int(a.seq_lens.size(0));
  if (B == 0 || a.q.size(0) == 0) return;
  // 16-byte vector loads of q and cache rows, 4-byte output stores: fall back if a view breaks that.
  const int cache_vec = a.k_cache.dtype == DType::F8E4M3 ? 16 : 8;
  const bool ok = attention_views_vec16(p, cache_vec) && reinterpret_cast<uintptr_t>(p.out) % 4 == 0 &&
                  p.o_s0 % 2 == 0 && p.o_s1 % 2 == 0;
  if (!ok) return attn_prefill_portable(a, s);
  const gpuStream_t st = native_stream(s);
  auto go = [&](auto tag, auto ctag) {
    using T = typename decltype(tag)::type;
    using TC = typename decltype(ctag)::type;
    switch (p.Dk) {
      case 64: launch<T, TC, 64>(p, B, a.max_q_len, st); break;
      case 128: launch<T, TC, 128>(p, B, a.max_q_len, st); break;
      default: launch<T, TC, 256>(p, B, a.max_q_len, st); break;
    }
  };
  dispatch_mma_attention(a, go);
  check_launch("attn_prefill_mma");
}

size_t smem_need(int64_t D, bool fp8) {
  if (fp8) return D == 64 ? kSmemBytes<64, gpu_fp8> : D == 128 ? kSmemBytes<128, gpu_fp8> : kSmemBytes<256, gpu_fp8>;
  return D == 64 ? kSmemBytes<64> : D == 128 ? kSmemBytes<128> : kSmemBytes<256>;
}

bool supports(const OpDesc& d, const DeviceCaps& c) { return mma_attention_supports(d, c, smem_need); }
}  // namespace

void register_attention_mma_kernels() {
  register_kernel<AttentionArgs>(Op::ATTN_PREFILL, DeviceKind::CUDA, "gpu.attn_prefill_mma_sm80", 20, supports,
                                 attn_prefill_mma);
}
#else
void register_attention_mma_kernels() {}  // NVIDIA-only fast path; MUSA uses the portable sibling
#endif

}  // namespace portllm::gpu
