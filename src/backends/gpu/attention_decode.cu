// ATTN_DECODE: one query token per sequence over the paged cache (portable CUDA C++).
//
// GQA-grouped split-KV: one block per (KV head, head chunk, sequence, split) serves the G query
// heads that share the KV head, so every K/V row is read from memory once per step, not G times.
// A block walks its split in tiles of kTile keys:
//   1. scores: warp w takes keys w, w+NW, ...; lanes split the head dim (4 consecutive values
//      each, so a warp reads a 128-value row slice in one coalesced access) and each (key, head)
//      dot product is a warp reduction. A warp's keys are unrolled so their loads are in flight
//      together: decode attention is a stream of independent row reads and needs memory-level
//      parallelism, not arithmetic;
//   2. online softmax (base 2, scale * log2(e) folded into q): warp w owns heads w, w+NW, ...;
//   3. values: the same key split; each thread accumulates its 4 dims of every head in registers.
// The warps' partial outputs are summed in shared memory. With more than one split, (max, sum,
// unnormalized output) per split go to scratch and a second kernel merges them.
// The number of splits depends on the batch only (the grid covers the device about four times
// over); each sequence's context is divided among them on the device.
#include <algorithm>
#include <cmath>

#include "backends/gpu/attention_common.cuh"
#include "backends/gpu/gpu_kernels.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;
constexpr int kThreads = 128;
constexpr int kNW = kThreads / kWarpSize;  // warps per block (1 on 128-wide warps)
constexpr int kTile = 32;                  // keys per tile
constexpr int kKeysPerWarp = kTile / kNW;
constexpr int kVec = 4;                    // consecutive head-dim values per lane
constexpr int kSpan = kWarpSize * kVec;    // head-dim values a warp covers per chunk
constexpr int kMaxD = 256;
constexpr float kLog2e = 1.4426950408889634f;
static_assert(kTile % kNW == 0, "tile keys split evenly over warps");

template <class T, int NC>
__device__ __forceinline__ void load_row(float (&v)[NC][kVec], const T* row, int D, int lane) {
#pragma unroll
  for (int c = 0; c < NC; ++c)
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const int d = c * kSpan + lane * kVec + i;
      v[c][i] = d < D ? ld(row, d) : 0.f;
    }
}

// G: query heads per block (template so per-head registers stay registers); NC: head-dim chunks.
template <class TQ, class TC, int G, int NC>
__global__ void __launch_bounds__(kThreads) attn_decode_gqa_kernel(AttnParams p) {
  const int chunks_per_kv = (p.group + G - 1) / G;
  const int kh = blockIdx.x / chunks_per_kv, hc = blockIdx.x % chunks_per_kv;
  const int b = blockIdx.y, split = blockIdx.z;
  const int h0 = kh * p.group + hc * G;
  const int ng = min(G, p.group - hc * G);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int ctx = p.seq_lens[b], qrow = p.qsl[b];
  // Each sequence's context is cut into p.splits equal chunks on the device, so the grid depends
  // only on the batch (a captured graph serves every context length).
  const int chunk = (ctx + p.splits - 1) / p.splits;
  const int start = split * chunk, end = min(ctx, start + chunk);
  const int Dk = p.Dk, Dv = p.Dv;

  __shared__ float s_p[G][kTile];
  __shared__ float s_m[G], s_l[G], s_alpha[G];
  __shared__ float s_acc[G][kMaxD];
  __shared__ int64_t s_koff[2][kTile], s_voff[2][kTile];

  const TQ* qbase = static_cast<const TQ*>(p.q) + int64_t(qrow) * p.q_s0;
  float q[G][NC][kVec], acc[G][NC][kVec];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (g < ng) load_row<TQ, NC>(q[g], qbase + int64_t(h0 + g) * p.q_s1, Dk, lane);
#pragma unroll
    for (int c = 0; c < NC; ++c)
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        q[g][c][i] = g < ng ? q[g][c][i] * (p.scale * kLog2e) : 0.f;
        acc[g][c][i] = 0.f;
      }
  }
  for (int i = threadIdx.x; i < G * kMaxD; i += kThreads) (&s_acc[0][0])[i] = 0.f;
  if (threadIdx.x < G) {
    s_m[threadIdx.x] = -INFINITY;
    s_l[threadIdx.x] = 0.f;
  }
  const TC* kc = static_cast<const TC*>(p.k_cache);
  const TC* vc = static_cast<const TC*>(p.v_cache);
  __syncthreads();

  // Each key's cache rows are looked up once, one tile ahead (double-buffered offsets), so the
  // block-table read is off the critical path.
  auto lookup = [&](int t, int buf) {
    const int n = min(kTile, end - t);
    for (int j = threadIdx.x; j < n; j += kThreads) {
      s_koff[buf][j] = kv_offset(p, b, t + j, p.kc_s0, p.kc_s1, p.kc_s2, kh);
      s_voff[buf][j] = kv_offset(p, b, t + j, p.vc_s0, p.vc_s1, p.vc_s2, kh);
    }
  };
  if (start < end) lookup(start, 0);
  __syncthreads();
  for (int t0 = start, buf = 0; t0 < end; t0 += kTile, buf ^= 1) {
    const int nk = min(kTile, end - t0);
    if (t0 + kTile < end) lookup(t0 + kTile, buf ^ 1);
    // 1. scores; the V rows are loaded together with the K rows so their latencies overlap.
    float kv[kKeysPerWarp][NC][kVec], vv[kKeysPerWarp][NC][kVec];
#pragma unroll
    for (int jj = 0; jj < kKeysPerWarp; ++jj) {
      const int j = jj * kNW + warp;
      if (j < nk) {
        load_row<TC, NC>(kv[jj], kc + s_koff[buf][j], Dk, lane);
        load_row<TC, NC>(vv[jj], vc + s_voff[buf][j], Dv, lane);
      }
    }
#pragma unroll
    for (int jj = 0; jj < kKeysPerWarp; ++jj) {
      const int j = jj * kNW + warp;
      if (j >= nk) {
        if (lane < G) s_p[lane][j] = -INFINITY;
        continue;
      }
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float dot = 0.f;
#pragma unroll
        for (int c = 0; c < NC; ++c)
#pragma unroll
          for (int i = 0; i < kVec; ++i) dot += q[g][c][i] * kv[jj][c][i];
        dot = warp_sum(dot);
        if (lane == 0) s_p[g][j] = dot;
      }
    }
    __syncthreads();
    // 2. online softmax, warp w owns heads w, w + NW, ...
    for (int g = warp; g < G; g += kNW) {
      float mx = -INFINITY;
      for (int j = lane; j < kTile; j += kWarpSize) mx = fmaxf(mx, s_p[g][j]);
      mx = warp_max(mx);
      const float m_old = s_m[g];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0.f;
      for (int j = lane; j < kTile; j += kWarpSize) {
        const float e = exp2f(s_p[g][j] - m_new);  // masked keys: exp2(-inf) = 0
        s_p[g][j] = e;
        sum += e;
      }
      sum = warp_sum(sum);
      if (lane == 0) {
        const float alpha = exp2f(m_old - m_new);  // m_old = -inf on the first tile: 0
        s_alpha[g] = alpha;
        s_l[g] = s_l[g] * alpha + sum;
        s_m[g] = m_new;
      }
    }
    __syncthreads();
    // 3. values
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const float a = s_alpha[g];
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int i = 0; i < kVec; ++i) acc[g][c][i] *= a;
    }
#pragma unroll
    for (int jj = 0; jj < kKeysPerWarp; ++jj) {
      const int j = jj * kNW + warp;
      if (j >= nk) continue;
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float pj = s_p[g][j];
#pragma unroll
        for (int c = 0; c < NC; ++c)
#pragma unroll
          for (int i = 0; i < kVec; ++i) acc[g][c][i] += pj * vv[jj][c][i];
      }
    }
    __syncthreads();  // s_p, s_alpha and the row offsets are rewritten by the next tile
  }
  // Sum the warps' partial outputs in warp order: a fixed order, so a step's output is the same
  // from run to run (shared float atomics add in whatever order the warps arrive, and the last
  // bit then varies, which flips near-tied greedy tokens).
#pragma unroll 1
  for (int w = 0; w < kNW; ++w) {
    if (warp == w) {
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int c = 0; c < NC; ++c)
#pragma unroll
          for (int i = 0; i < kVec; ++i) {
            const int d = c * kSpan + lane * kVec + i;
            if (g < ng && d < Dv) s_acc[g][d] += acc[g][c][i];
          }
    }
    __syncthreads();
  }
  for (int idx = threadIdx.x; idx < ng * Dv; idx += kThreads) {
    const int g = idx / Dv, d = idx % Dv, h = h0 + g;
    const float L = s_l[g];
    if (p.splits == 1) {
      TQ* orow = static_cast<TQ*>(p.out) + int64_t(qrow) * p.o_s0 + int64_t(h) * p.o_s1;
      orow[d] = cvt<TQ>(L > 0.f ? s_acc[g][d] / L : 0.f);
    } else {
      const int64_t row = (int64_t(b) * p.Hq + h) * p.splits + split;
      p.part_o[row * Dv + d] = s_acc[g][d];
      if (d == 0) {
        p.part_ml[row * 2] = s_m[g];
        p.part_ml[row * 2 + 1] = L;
      }
    }
  }
}

// Merges the splits of one (query head, sequence): out = sum_s 2^(m_s - M) o_s / sum_s 2^(m_s - M) l_s.
// The per-split weights are computed once, in parallel, into shared memory (a serial walk over
// the splits would be a chain of dependent global loads per thread).
template <class TQ>
__global__ void __launch_bounds__(kThreads) attn_decode_combine_kernel(AttnParams p) {
  const int h = blockIdx.x, b = blockIdx.y;
  const int64_t base = (int64_t(b) * p.Hq + h) * p.splits;
  __shared__ float s_w[kMaxSplits];
  __shared__ float red[32];
  float mx = -INFINITY;
  for (int s = threadIdx.x; s < p.splits; s += kThreads)
    if (p.part_ml[(base + s) * 2 + 1] > 0.f) mx = fmaxf(mx, p.part_ml[(base + s) * 2]);
  const float M = block_max(mx, red);
  float lsum = 0.f;
  for (int s = threadIdx.x; s < p.splits; s += kThreads) {
    const float ls = p.part_ml[(base + s) * 2 + 1];
    const float w = ls > 0.f ? exp2f(p.part_ml[(base + s) * 2] - M) : 0.f;
    s_w[s] = w;
    lsum += ls * w;
  }
  const float L = block_sum(lsum, red);  // block_sum synchronizes, so s_w is complete
  const float inv = L > 0.f ? 1.f / L : 0.f;
  const int qrow = p.qsl[b];
  TQ* orow = static_cast<TQ*>(p.out) + int64_t(qrow) * p.o_s0 + int64_t(h) * p.o_s1;
  // Every split wrote its partial output (zeros for a split without keys, whose weight is 0), so
  // the loads need no condition and the unrolled loop keeps several of them in flight: a
  // branch per split made this a chain of dependent L2 round trips, the bulk of a batch-1 step.
  for (int d = threadIdx.x; d < p.Dv; d += kThreads) {
    float o = 0.f;
#pragma unroll 8
    for (int s = 0; s < p.splits; ++s) o += p.part_o[(base + s) * p.Dv + d] * s_w[s];
    orow[d] = cvt<TQ>(o * inv);
  }
}

template <class TQ, class TC, int G>
void launch_g(const AttnParams& p, int B, gpuStream_t st) {
  const int chunks_per_kv = (p.group + G - 1) / G;
  const dim3 grid(unsigned(p.Hkv * chunks_per_kv), unsigned(B), unsigned(p.splits));
  if (std::max(p.Dk, p.Dv) <= kSpan)
    attn_decode_gqa_kernel<TQ, TC, G, 1><<<grid, kThreads, 0, st>>>(p);
  else
    attn_decode_gqa_kernel<TQ, TC, G, (kMaxD + kSpan - 1) / kSpan><<<grid, kThreads, 0, st>>>(p);
}

bool supports(const OpDesc& d, const DeviceCaps&) {
  if (!is_gpu_float(d.dtype[0]) || !is_gpu_cache(d.dtype[2])) return false;
  const int64_t Dk = d.dim[0], Dv = d.dim[3];
  return Dk > 0 && Dv > 0 && Dk <= kMaxD && Dv <= kMaxD;
}
}  // namespace

int decode_splits(const AttentionArgs& a, int blocks, int min_keys, const DeviceCaps& caps, int blocks_per_cu) {
  // About blocks_per_cu blocks per compute unit, but no split shorter than min_keys keys of the
  // longest context (max_seq_len may be an upper bound: graphs capture with the model's maximum).
  const int max_ctx = std::max(1, a.max_seq_len);
  const int want = std::max(1, (blocks_per_cu * caps.num_compute_units + blocks - 1) / std::max(1, blocks));
  return std::clamp((max_ctx + min_keys - 1) / min_keys, 1, std::min(want, kMaxSplits));
}

std::shared_ptr<void> decode_partials(AttnParams& p, int B, Stream& s) {
  if (p.splits <= 1) return nullptr;
  const size_t rows = size_t(B) * p.Hq * p.splits;
  std::shared_ptr<void> ws = scratch(s, rows * (size_t(p.Dv) + 2) * sizeof(float));
  p.part_o = static_cast<float*>(ws.get());
  p.part_ml = p.part_o + rows * p.Dv;
  return ws;
}

void attn_decode_combine(const AttnParams& p, int B, DType q_dtype, gpuStream_t st) {
  if (p.splits <= 1) return;
  dispatch_float(q_dtype, [&](auto tq) {
    using TQ = typename decltype(tq)::type;
    attn_decode_combine_kernel<TQ><<<dim3(unsigned(p.Hq), unsigned(B)), kThreads, 0, st>>>(p);
  });
}

void attn_decode_portable(const AttentionArgs& a, Stream& s) {
  AttnParams p = params_of(a);
  const int B = int(a.seq_lens.size(0));
  if (B == 0) return;
  const int G = p.group <= 1 ? 1 : p.group <= 2 ? 2 : p.group <= 4 ? 4 : 8;
  // No split shorter than 16 keys.
  p.splits = decode_splits(a, B * p.Hkv * ((p.group + G - 1) / G), 16, caps_of(s));
  const std::shared_ptr<void> ws = decode_partials(p, B, s);
  const gpuStream_t st = native_stream(s);
  dispatch_attn(a, [&](auto tq, auto tc) {
    using TQ = typename decltype(tq)::type;
    using TC = typename decltype(tc)::type;
    switch (G) {
      case 1: launch_g<TQ, TC, 1>(p, B, st); break;
      case 2: launch_g<TQ, TC, 2>(p, B, st); break;
      case 4: launch_g<TQ, TC, 4>(p, B, st); break;
      default: launch_g<TQ, TC, 8>(p, B, st); break;
    }
  });
  attn_decode_combine(p, B, a.q.dtype, st);
  check_launch("attn_decode");
}

void register_attention_decode_kernels() {
  register_kernel<AttentionArgs>(Op::ATTN_DECODE, kKind, "gpu.attn_decode_gqa_split_kv", 10, supports,
                                 attn_decode_portable);
}

}  // namespace portllm::gpu
