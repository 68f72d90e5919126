// ATTN_DECODE on NVIDIA tensor cores (sm_80+): split-KV decode for bf16/f16 caches.
// NVIDIA-only fast path (inline PTX: mma.sync, ldmatrix, cp.async), ARCHITECTURE.md rule 4; its
// portable sibling is attention_decode.cu, which MUSA builds and which this kernel falls back to
// for what it does not take (f32, mixed dtypes, head dims other than 64/128/256, unaligned views).
//
// Why tensor cores for a memory-bound op: the G query heads that share a KV head form the rows of
// an m16n8k16 tile (padded to 16), so one K/V tile read serves all of them and the per-key
// arithmetic (dot products, softmax bookkeeping, P V) costs a few instructions per warp instead
// of the ~70 of a CUDA-core kernel; with that gone, the kernel is a stream of cache reads.
//
// One block of 4 warps per (KV head, 16-row chunk of its query heads, sequence, split). Each warp
// walks its own 16-key tiles of the split (w, w + 4, ...) with a private double buffer filled by
// cp.async, so the next tile is in flight while the current one is multiplied and there is no
// block barrier in the loop. S = Q K^T and O += P V run as in the tensor-core prefill kernel
// (online softmax in base 2 on the accumulator fragments). At the end the 4 warps' (max, sum,
// output) are merged through shared memory; with several splits the partials go to the shared
// combine kernel (attention_decode.cu).
#include <algorithm>
#include <cmath>

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
constexpr int kRows = 16;  // query rows per block (the MMA's M): query heads of one KV head
constexpr int kKeys = 16;  // keys per tile
constexpr int kWarps = 4, kThreads = kWarps * 32;
constexpr float kLog2e = 1.4426950408889634f;

template <int D> constexpr int kLd = D + 8;  // padded smem row: 16-byte aligned, no ldmatrix bank conflicts
template <int D> constexpr size_t kTileElems = size_t(kKeys) * kLd<D>;
// Q, then per warp two buffers of (K tile, V tile). The warps' final outputs (f32) reuse the K/V
// region, which is larger.
template <int D> constexpr size_t kSmemBytes = (size_t(kRows) * kLd<D> + size_t(kWarps) * 4 * kTileElems<D>) * 2;

template <class T, int D>
__global__ void __launch_bounds__(kThreads) attn_decode_mma_kernel(AttnParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int LD = kLd<D>, VPR = D / 8;  // 16-byte vectors per row
  static_assert(size_t(kWarps) * kRows * D * 4 <= size_t(kWarps) * 4 * kTileElems<D> * 2, "outputs fit the K/V region");
  const int row_tiles = (p.group + kRows - 1) / kRows;
  const int kh = blockIdx.x / row_tiles, rt = blockIdx.x % row_tiles;
  const int b = blockIdx.y, split = blockIdx.z;
  const int h0 = kh * p.group + rt * kRows;
  const int ng = min(kRows, p.group - rt * kRows);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int ctx = p.seq_lens[b], qrow = p.qsl[b];
  // Splits are a whole number of tiles, so every tile starts at a multiple of 16 keys: inside one
  // page whenever the page size is a multiple of 16 (one block-table lookup per tile).
  const int per_split = (ctx + p.splits - 1) / p.splits;
  const int chunk = (per_split + kKeys - 1) / kKeys * kKeys;
  const int start = min(ctx, split * chunk), end = min(ctx, start + chunk);
  const int n_tiles = (end - start + kKeys - 1) / kKeys;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sKV = sQ + kRows * LD;
  __shared__ float s_m[kWarps][kRows], s_l[kWarps][kRows];
  const T* q = static_cast<const T*>(p.q);
  const T* kc = static_cast<const T*>(p.k_cache);
  const T* vc = static_cast<const T*>(p.v_cache);

  // Starts the copy of tile t into this warp's buffer buf; rows past the split are zero-filled
  // (their scores are masked, and zero V rows keep P V finite).
  const bool one_page = p.page % kKeys == 0;
  auto issue = [&](int t, int buf) {
    T* sK = sKV + size_t(warp * 2 + buf) * 2 * kTileElems<D>;
    T* sV = sK + kTileElems<D>;
    const int kt = start + t * kKeys;
    int64_t kbase = 0, vbase = 0;
    if (one_page) {
      kbase = kv_offset(p, b, kt, p.kc_s0, p.kc_s1, p.kc_s2, kh);
      vbase = kv_offset(p, b, kt, p.vc_s0, p.vc_s1, p.vc_s2, kh);
    }
#pragma unroll
    for (int i = lane; i < kKeys * VPR; i += 32) {
      const int r = i / VPR, c = i % VPR;
      const bool ok = kt + r < end;
      int64_t ko = 0, vo = 0;
      if (ok) {
        ko = one_page ? kbase + int64_t(r) * p.kc_s1 : kv_offset(p, b, kt + r, p.kc_s0, p.kc_s1, p.kc_s2, kh);
        vo = one_page ? vbase + int64_t(r) * p.vc_s1 : kv_offset(p, b, kt + r, p.vc_s0, p.vc_s1, p.vc_s2, kh);
      }
      cp_async16(sK + r * LD + c * 8, kc + ko + c * 8, ok ? 16 : 0);
      cp_async16(sV + r * LD + c * 8, vc + vo + c * 8, ok ? 16 : 0);
    }
  };

  float o[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;  // rows lane/4 and lane/4 + 8
  const float sl2 = p.scale * kLog2e;

  // Q (rows past the group zero-filled: zero queries, never written out) and each warp's first
  // tile are copied together, so the Q barrier overlaps the first K/V reads.
  for (int i = tid; i < kRows * VPR; i += kThreads) {
    const int r = i / VPR, c = i % VPR;
    const int64_t off = r < ng ? int64_t(qrow) * p.q_s0 + int64_t(h0 + r) * p.q_s1 + c * 8 : 0;
    cp_async16(sQ + r * LD + c * 8, q + off, r < ng ? 16 : 0);
  }
  cp_async_commit();
  if (warp < n_tiles) issue(warp, 0);
  cp_async_commit();
  cp_async_wait<1>();  // this thread's Q copies (not the tile)
  __syncthreads();     // everyone's Q copies

  // The trip count depends on the warp only: every lane runs every iteration (the softmax
  // reductions are full-warp shuffles).
  int buf = 0;
  for (int t = warp; t < n_tiles; t += kWarps, buf ^= 1) {
    if (t + kWarps < n_tiles) issue(t + kWarps, buf ^ 1);
    cp_async_commit();  // possibly empty: keeps "all but the newest group" = tile t
    cp_async_wait<1>();
    __syncwarp();  // tile t, copied by all lanes, is visible to the whole warp
    const T* sK = sKV + size_t(warp * 2 + buf) * 2 * kTileElems<D>;
    const T* sV = sK + kTileElems<D>;
    const int kt = start + t * kKeys;

    float s[2][4];
#pragma unroll
    for (int i = 0; i < 2; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D; kk += 16) {
      uint32_t a[4], kb[4];
      ldsm_x4(a, sQ + (lane % 16) * LD + kk + (lane / 16) * 8);
      ldsm_x4(kb, sK + (lane % 8 + (lane / 16) * 8) * LD + kk + ((lane / 8) % 2) * 8);
      Mma<T>::run(s[0], a, kb[0], kb[1]);
      Mma<T>::run(s[1], a, kb[2], kb[3]);
    }
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int kpos = kt + nt * 8 + (lane % 4) * 2 + (e & 1);
        const float v = kpos < end ? s[nt][e] * sl2 : -INFINITY;
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
    for (int nt = 0; nt < 2; ++nt) {
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
    uint32_t a[4];  // P's accumulator fragments are the A fragments of P V
    a[0] = Mma<T>::pack(s[0][0], s[0][1]);
    a[1] = Mma<T>::pack(s[0][2], s[0][3]);
    a[2] = Mma<T>::pack(s[1][0], s[1][1]);
    a[3] = Mma<T>::pack(s[1][2], s[1][3]);
#pragma unroll
    for (int d2 = 0; d2 < D / 16; ++d2) {
      o[2 * d2][0] *= alpha0;
      o[2 * d2][1] *= alpha0;
      o[2 * d2][2] *= alpha1;
      o[2 * d2][3] *= alpha1;
      o[2 * d2 + 1][0] *= alpha0;
      o[2 * d2 + 1][1] *= alpha0;
      o[2 * d2 + 1][2] *= alpha1;
      o[2 * d2 + 1][3] *= alpha1;
      uint32_t vb[4];
      ldsm_x4_trans(vb, sV + (lane % 8 + ((lane / 8) % 2) * 8) * LD + d2 * 16 + (lane / 16) * 8);
      Mma<T>::run(o[2 * d2], a, vb[0], vb[1]);
      Mma<T>::run(o[2 * d2 + 1], a, vb[2], vb[3]);
    }
    __syncwarp();  // every lane is done with buf before the next iteration refills it
  }
  l0 = quad_sum(l0);
  l1 = quad_sum(l1);

  // Merge the warps: (max, sum) per row and the unnormalized outputs through shared memory.
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with its K/V buffers, which now hold the outputs
  float* s_o = reinterpret_cast<float*>(sKV);  // [kWarps][kRows][D]
  const int r0 = lane / 4;
  if (lane % 4 == 0) {
    s_m[warp][r0] = m0;
    s_l[warp][r0] = l0;
    s_m[warp][r0 + 8] = m1;
    s_l[warp][r0 + 8] = l1;
  }
#pragma unroll
  for (int i = 0; i < D / 8; ++i) {
    const int d = i * 8 + (lane % 4) * 2;
    float* row0 = s_o + (size_t(warp) * kRows + r0) * D;
    float* row1 = row0 + 8 * D;
    row0[d] = o[i][0];
    row0[d + 1] = o[i][1];
    row1[d] = o[i][2];
    row1[d + 1] = o[i][3];
  }
  __syncthreads();
  for (int idx = tid; idx < ng * D; idx += kThreads) {
    const int g = idx / D, d = idx % D, h = h0 + g;
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      if (s_l[w][g] > 0.f) M = fmaxf(M, s_m[w][g]);
    float L = 0.f, acc = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      if (s_l[w][g] > 0.f) {
        const float e = exp2f(s_m[w][g] - M);
        L += s_l[w][g] * e;
        acc += s_o[(size_t(w) * kRows + g) * D + d] * e;
      }
    if (p.splits == 1) {
      T* orow = static_cast<T*>(p.out) + int64_t(qrow) * p.o_s0 + int64_t(h) * p.o_s1;
      orow[d] = cvt<T>(L > 0.f ? acc / L : 0.f);
    } else {
      const int64_t row = (int64_t(b) * p.Hq + h) * p.splits + split;
      p.part_o[row * D + d] = acc;
      if (d == 0) {
        p.part_ml[row * 2] = M;
        p.part_ml[row * 2 + 1] = L;
      }
    }
  }
#endif
}

template <class T, int D>
void launch(const AttnParams& p, int B, gpuStream_t st) {
  (void)gpuFuncSetAttribute(attn_decode_mma_kernel<T, D>, gpuFuncAttributeMaxDynamicSharedMemorySize,
                            int(kSmemBytes<D>));
  const int row_tiles = (p.group + kRows - 1) / kRows;
  const dim3 grid(unsigned(p.Hkv * row_tiles), unsigned(B), unsigned(p.splits));
  attn_decode_mma_kernel<T, D><<<grid, kThreads, kSmemBytes<D>, st>>>(p);
}

void attn_decode_mma(const AttentionArgs& a, Stream& s) {
  AttnParams p = params_of(a);
  const int B = int(a.seq_lens.size(0));
  if (B == 0) return;
  // 16-byte copies of q and cache rows: fall back if a view breaks that.
  const bool ok = attention_views_vec16(p);
  if (!ok) return attn_decode_portable(a, s);
  // At least 128 keys per split (two tiles per warp: one in flight while the other is computed).
  // Small batches get about two blocks per compute unit (three fit): one wave, and fewer partials
  // to combine; large ones four (several waves, so the last one's tail matters less).
  const int blocks = B * p.Hkv * ((p.group + kRows - 1) / kRows);
  const DeviceCaps& caps = caps_of(s);
  p.splits = decode_splits(a, blocks, 2 * kWarps * kKeys, caps, blocks < caps.num_compute_units ? 2 : 4);
  const std::shared_ptr<void> ws = decode_partials(p, B, s);
  const gpuStream_t st = native_stream(s);
  auto go = [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (p.Dk) {
      case 64: launch<T, 64>(p, B, st); break;
      case 128: launch<T, 128>(p, B, st); break;
      default: launch<T, 256>(p, B, st); break;
    }
  };
  if (a.q.dtype == DType::BF16) go(Tag<gpu_bf16>{});
  else go(Tag<gpu_half>{});
  attn_decode_combine(p, B, a.q.dtype, st);
  check_launch("attn_decode_mma");
}

bool supports(const OpDesc& d, const DeviceCaps& c) {
  return mma_attention_supports(d, c, kSmemBytes<64>, kSmemBytes<128>, kSmemBytes<256>);
}
}  // namespace

void register_attention_decode_mma_kernels() {
  register_kernel<AttentionArgs>(Op::ATTN_DECODE, DeviceKind::CUDA, "gpu.attn_decode_mma_sm80", 20, supports,
                                 attn_decode_mma);
}
#else
void register_attention_decode_mma_kernels() {}  // NVIDIA-only fast path; MUSA uses the portable sibling
#endif

}  // namespace portllm::gpu
