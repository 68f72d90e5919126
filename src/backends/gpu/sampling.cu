// SAMPLE on the GPU (semantics in ops/op_args_sample.h): one block of kThreads threads per row,
// several passes over the row (which stays in L2 at moderate batch sizes), no sort.
//
//   1. adjustments (bias, min_tokens mask, repetition, presence/frequency), one phase per kind;
//   2. one pass: argmax (ARGMAX semantics), the row max mx and the finite minimum;
//      greedy rows (or a non-finite max) stop here; at small batches greedy rows without
//      adjustments, and plain sampling rows, are split over several blocks instead (part_max_kernel);
//   3. top-k / top-p cuts by selection instead of sorting. The ranking (logit desc, id asc) is a
//      total order, and a cut keeps a rank prefix, so a cut is "the element at which the
//      cumulative weight, walked from the top, first reaches T": weight 1 and T = k for top-k,
//      weight = fixed-point rel and T = ceil(top_p * mass) for top-p. It is found by narrowing:
//      level 0 histograms a linear value bin of (mx - l) (spreads typical logits over the 256
//      bins, so shared-memory atomics are not all on a few addresses); levels 1..4 histogram
//      the 8-bit digits of the order-preserving 32-bit key, restricted to the chosen bin. A
//      suffix scan over the 256 bins picks the bin where the cumulative weight crosses T. It
//      stops early when the chosen bin is kept whole (top-k: the count lands exactly on k;
//      top-p: the bin holds one token). At the exact key, ties keep the lowest ids: the
//      need-th equal element in id order is found by an ordered scan;
//   4. the draw: an ordered scan (warps own contiguous id segments; per-warp totals narrow the
//      range twice, then a warp-level inclusive scan of what is left) finds the first survivor
//      whose cumulative mass exceeds u * total.
// Masses are u64 fixed point (rel * 2^s with V * 2^s <= 2^62), so sums are exact integers and
// the result does not depend on the order of atomics or reductions: run to run the kernel is
// deterministic, and it differs from the host only by expf vs exp rounding of rel.
#include <algorithm>
#include <cmath>
#include <memory>
#include <cstdint>

#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "ops/op_args_sample.h"
#include "ops/registry.h"
#include "ops/sample_math.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;

using u64 = unsigned long long;  // the type atomics and shuffles take
constexpr int kThreads = 1024;
constexpr int kNW = kThreads / kWarpSize;
constexpr int kBins = 256;
constexpr int64_t kNoCut = INT64_MAX;
// Loads in flight per thread in the passes over a row: one at a time kept a 1024-thread block at
// ~4 KB in flight per SM, far below what the memory latency needs. Each pass loads kLoads
// elements, then visits them in id order, so the order of visits is the one-load loop's. (Written
// out in every pass: the same passes through a helper taking the body as a lambda that captured
// the loop state by reference failed the SAMPLE conformance cases on the H200, cause not found.)
constexpr int kLoads = 8;

// vals[u] = row[j0 + u * stride] for the ids below end: kLoads loads issued before any is used.
__device__ __forceinline__ void load_ahead(float (&vals)[kLoads], const float* row, int64_t j0, int64_t end,
                                           int64_t stride) {
#pragma unroll
  for (int u = 0; u < kLoads; ++u) {
    const int64_t j = j0 + int64_t(u) * stride;
    vals[u] = j < end ? row[j] : 0.f;
  }
}
// The same with 16-byte loads: kVecLoads vectors of 4 consecutive ids per thread in flight, 4x
// the bytes of one float each. At moderate batches a row has one block on a compute unit, which
// then streams the row at what its loads in flight allow (~10-20 GB/s with single floats).
// Used where the row is 16-byte aligned; q[u] covers ids c*4 .. c*4+3 for c = c0 + u * stride.
// Ids at or past `end` read as 0 (callers skip them).
constexpr int kVecLoads = 4;
__device__ __forceinline__ void load_ahead4(float4 (&q)[kVecLoads], const float* row, int64_t c0, int64_t end,
                                            int64_t stride) {
#pragma unroll
  for (int u = 0; u < kVecLoads; ++u) {
    const int64_t j = (c0 + int64_t(u) * stride) * 4;
    if (j + 3 < end) {
      q[u] = *reinterpret_cast<const float4*>(row + j);
    } else {
      q[u].x = j < end ? row[j] : 0.f;
      q[u].y = j + 1 < end ? row[j + 1] : 0.f;
      q[u].z = j + 2 < end ? row[j + 2] : 0.f;
      q[u].w = j + 3 < end ? row[j + 3] : 0.f;
    }
  }
}
__device__ __forceinline__ float lane_of(const float4& q, int e) {
  return e == 0 ? q.x : e == 1 ? q.y : e == 2 ? q.z : q.w;
}
__device__ __forceinline__ bool aligned_row(const float* row) { return reinterpret_cast<uintptr_t>(row) % 16 == 0; }
static_assert(kThreads >= kBins && kThreads % kWarpSize == 0 && kNW <= 32, "block shape");

struct Shared {
  unsigned int cnt[kBins];
  u64 wsum[kBins];
  u64 scan[kBins];
  u64 warp_u64[kNW];
  float warp_best[kNW], warp_max[kNW], warp_min[kNW];
  long long warp_idx[kNW];
  long long res;
  int sel;
  u64 sel_above;
};

__device__ __forceinline__ bool finite_f(float x) { return fabsf(x) < INFINITY; }  // false for NaN

__device__ __forceinline__ u64 warp_sum_u64(u64 v) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) v += gpu_shfl_xor(v, m);
  return v;
}
__device__ __forceinline__ int warp_min_int(int v) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) v = min(v, gpu_shfl_xor(v, m));
  return v;
}

// Sum over the block; every thread gets it. Starts with a barrier so warp_u64 may be reused.
__device__ u64 block_sum_u64(u64 v, Shared& sm) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  v = warp_sum_u64(v);
  __syncthreads();
  if (lane == 0) sm.warp_u64[warp] = v;
  __syncthreads();
  u64 t = 0;
  for (int w = 0; w < kNW; ++w) t += sm.warp_u64[w];
  return t;
}

struct RowCtx {
  const float* row;
  int64_t V;
  bool vec;  // 16-byte loads of the row (load_ahead4)
  float mx, inv_t, min_p, vb_scale;
  double fx_scale;  // 2^s
  __device__ float rel(float l) const { return expf((l - mx) * inv_t); }
  __device__ bool eligible(float l) const { return finite_f(l) && (!(min_p > 0.f) || rel(l) >= min_p); }
  __device__ u64 mass(float l) const { return u64(double(rel(l)) * fx_scale); }
  // 255 for the largest values down to 0; non-increasing in (mx - l), so monotone in l.
  __device__ int vbin(float l) const {
    const float f = (mx - l) * vb_scale;
    return 255 - (f < 255.f ? int(f) : 255);  // NaN (inf * 0) -> bin 0
  }
};

// A rank-prefix cut: keeps bins above b0, and within b0 the keys whose masked bits are above
// prefix, or equal with id <= idcut. b0 = -1 keeps everything.
struct Cut {
  int b0 = -1;
  uint32_t mask = 0, prefix = 0;
  int64_t idcut = kNoCut;
};
__device__ __forceinline__ bool kept(const Cut& c, int vb, uint32_t key, int64_t j) {
  if (vb != c.b0) return vb > c.b0;
  const uint32_t kp = key & c.mask;
  return kp > c.prefix || (kp == c.prefix && j <= c.idcut);
}

// sm.scan[0..255] holds bin weights (bin 255 = largest values). Picks the bin d where the
// weight walked down from the top crosses T: above + sum(d..255) >= T > above + sum(d+1..255).
// d = -1 when even all bins do not reach T. Every thread gets d and the new `above`.
__device__ void select_bin(u64 above, u64 T, Shared& sm, int& d, u64& new_above) {
  const int tid = threadIdx.x;
  if (tid == 0) sm.sel = -1;
  __syncthreads();
  for (int off = 1; off < kBins; off <<= 1) {  // inclusive suffix sums
    u64 add = 0;
    if (tid < kBins && tid + off < kBins) add = sm.scan[tid + off];
    __syncthreads();
    if (tid < kBins) sm.scan[tid] += add;
    __syncthreads();
  }
  if (tid < kBins) {
    const u64 incl = above + sm.scan[tid];
    const u64 excl = above + (tid + 1 < kBins ? sm.scan[tid + 1] : 0ull);
    if (incl >= T && excl < T) {
      sm.sel = tid;
      sm.sel_above = excl;
    }
  }
  __syncthreads();
  d = sm.sel;
  new_above = d >= 0 ? sm.sel_above : above;
}

// Over ids [lo, hi) of the row, with `before` the weight of the ids before lo: the smallest j in
// the range at which before + the running sum in id order of w(row[j], j) exceeds
// target_of(before + the range's weight); -1 when it never does. (A split row passes one slice
// and its target; the one-block path the whole row.) Two rounds narrow the range: the block's
// warps sum contiguous segments of it (multiples of 128 ids, so 16-byte loads stay aligned), and
// the segment where the running sum crosses the target is the range of the next round; then one
// warp scans what is left (256 ids at V = 151936) in id order. The weights are integers, so the
// sums do not depend on how the range is cut. (After one round a warp scanned ~4.7k ids alone,
// one dependent load per 32 ids.)
template <class W, class Target>
__device__ int64_t ordered_find(const float* row, int64_t lo, int64_t hi, u64 before, bool vec, W w, Target target_of,
                                Shared& sm) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  vec = vec && lo % 4 == 0;
  u64 target = 0;
  for (int round = 0; round < 2; ++round) {
    const int64_t per = (hi - lo + kNW - 1) / kNW;
    const int64_t seg = (per + 4 * kWarpSize - 1) / (4 * kWarpSize) * (4 * kWarpSize);
    const int64_t s0 = min(hi, lo + int64_t(warp) * seg), s1 = min(hi, s0 + seg);
    u64 acc = 0;
    if (vec) {
      // Lane l reads ids s0 + 4 l .. +3, then 128 further, ...; s0 is a multiple of 128.
      for (int64_t c0 = s0 / 4 + lane; 4 * c0 < s1; c0 += int64_t(kVecLoads) * kWarpSize) {
        float4 q[kVecLoads];
        load_ahead4(q, row, c0, s1, kWarpSize);
#pragma unroll
        for (int u = 0; u < kVecLoads; ++u) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int64_t j = (c0 + int64_t(u) * kWarpSize) * 4 + e;
            if (j < s1) acc += w(lane_of(q[u], e), j);
          }
        }
      }
    } else {
      constexpr int kW = kLoads / 2;  // u64 weights: half as many, within the register budget
      for (int64_t j0 = s0 + lane; j0 < s1; j0 += int64_t(kW) * kWarpSize) {
        u64 ws[kW];
#pragma unroll
        for (int u = 0; u < kW; ++u) {
          const int64_t j = j0 + int64_t(u) * kWarpSize;
          ws[u] = j < s1 ? w(row[j], j) : 0ull;
        }
#pragma unroll
        for (int u = 0; u < kW; ++u) acc += ws[u];
      }
    }
    acc = warp_sum_u64(acc);
    __syncthreads();  // earlier readers of warp_u64 are done
    if (lane == 0) sm.warp_u64[warp] = acc;
    __syncthreads();
    if (round == 0) {
      u64 total = before;
      for (int x = 0; x < kNW; ++x) total += sm.warp_u64[x];
      target = target_of(total);
      if (target >= total) {  // the same in every thread
        __syncthreads();
        return -1;
      }
    }
    // The first segment where before + its sum > target (one exists: the range's sum exceeds
    // target - before).
    int sel = kNW - 1;
    for (int x = 0; x < kNW; ++x) {
      if (before + sm.warp_u64[x] > target) {
        sel = x;
        break;
      }
      before += sm.warp_u64[x];
    }
    const int64_t nlo = min(hi, lo + int64_t(sel) * seg);
    hi = min(hi, nlo + seg);
    lo = nlo;
  }
  if (threadIdx.x == 0) sm.res = -1;
  __syncthreads();
  if (warp == 0) {
    u64 run = before;
    for (int64_t base = lo; base < hi; base += kWarpSize) {
      const int64_t j = base + lane;
      u64 v = j < hi ? w(row[j], j) : 0ull;
#pragma unroll
      for (int off = 1; off < kWarpSize; off <<= 1) {
        const u64 y = gpu_shfl(v, lane >= off ? lane - off : 0);
        if (lane >= off) v += y;
      }
      const int hit = warp_min_int(run + v > target ? lane : kWarpSize);
      if (hit < kWarpSize) {
        if (lane == 0) sm.res = base + hit;
        break;
      }
      run += gpu_shfl(v, kWarpSize - 1);
    }
  }
  __syncthreads();
  const int64_t r = sm.res;
  __syncthreads();
  return r;
}

// The cut that keeps the rank prefix ending where the weight walked from the top first reaches
// T (T >= 1) over the elements with in(l, j). kMass: weight = mass, else 1.
template <bool kMass, class In>
__device__ Cut select_cut(const RowCtx& rc, In in, u64 T, Shared& sm) {
  const int tid = threadIdx.x;
  u64 above = 0;
  int b0 = -1;
  uint32_t mask = 0, prefix = 0;
  for (int level = 0; level < 5; ++level) {
    __syncthreads();  // readers of the previous level's histograms are done
    for (int i = tid; i < kBins; i += kThreads) {
      sm.cnt[i] = 0;
      sm.wsum[i] = 0;
    }
    __syncthreads();
    const int shift = level == 0 ? 0 : 32 - 8 * level;  // levels 1..4: bits 31..24, .., 7..0
    for (int64_t j0 = tid; j0 < rc.V; j0 += int64_t(kLoads) * kThreads) {
      float ls[kLoads];
      load_ahead(ls, rc.row, j0, rc.V, kThreads);
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int64_t j = j0 + int64_t(u) * kThreads;
        if (j >= rc.V) break;
        const float l = ls[u];
        if (!in(l, j)) continue;
        const int vb = rc.vbin(l);
        int bin = vb;
        if (level > 0) {
          if (vb != b0) continue;
          const uint32_t key = sampling::order_key(l);
          if ((key & mask) != prefix) continue;
          bin = int((key >> shift) & 255u);
        }
        atomicAdd(&sm.cnt[bin], 1u);
        if constexpr (kMass) atomicAdd(&sm.wsum[bin], rc.mass(l));
      }
    }
    __syncthreads();
    if (tid < kBins) sm.scan[tid] = kMass ? sm.wsum[tid] : u64(sm.cnt[tid]);
    int d;
    u64 new_above;
    select_bin(above, T, sm, d, new_above);
    if (d < 0) return Cut{};  // everything together weighs less than T: no cut
    const u64 n = sm.cnt[d];
    const u64 wbin = kMass ? sm.wsum[d] : n;
    if (level == 0) {
      b0 = d;
    } else {
      mask |= 255u << shift;
      prefix |= uint32_t(d) << shift;
    }
    above = new_above;
    // The whole bin is kept when its last element is the crossing one.
    if (kMass ? n == 1 : above + wbin == T) return Cut{b0, mask, prefix, kNoCut};
    if (level == 4) {  // one exact key: equal logits, equal weights; keep the lowest ids
      const u64 weq = n > 0 && wbin / n > 0 ? wbin / n : 1ull;
      const u64 need = (T - above + weq - 1) / weq;
      if (need >= n) return Cut{b0, mask, prefix, kNoCut};
      const uint32_t key_eq = prefix;
      const int bin_eq = b0;
      const int64_t id = ordered_find(
          rc.row, 0, rc.V, 0, rc.vec,
          [&](float l, int64_t j) -> u64 {
            return (in(l, j) && rc.vbin(l) == bin_eq && sampling::order_key(l) == key_eq) ? 1ull : 0ull;
          },
          [need](u64) -> u64 { return need - 1; }, sm);
      return Cut{b0, mask, prefix, id >= 0 ? id : kNoCut};
    }
  }
  return Cut{};
}

// The draw's target for uniform u: the mass u * total walked from id 0 must be exceeded.
__device__ __forceinline__ u64 draw_target(double u, u64 total) {
  if (total == 0) return 0;
  const u64 t = u64(u * double(total));
  return t < total ? t : total - 1;
}

// ---- Rows split over blocks. One block per row reads a row at a single SM's rate (~30 GB/s: 21
// us for 151936 logits at batch 1, on every decode step's path), and with more rows than SMs some
// SMs hold two rows while others idle. Instead up to kMaxSplit blocks per row each read one slice:
//  - greedy rows: part_max_kernel finds each slice's maximum, sample_kernel reduces them;
//  - plain sampling rows (temperature, no top-k / top-p / min-p, no adjustments): part_max_kernel
//    also keeps each slice's fmax, part_mass_kernel sums each slice's fixed-point masses against
//    the row's max, and sample_kernel picks the slice where the running mass crosses the target
//    and narrows within it. The masses are the one-block path's integers and the answer is the
//    same id (the first at which the running sum exceeds the target does not depend on slicing).
// Other rows (filters, adjustments, which sample_kernel applies in place first) take the one-block
// path as before.
constexpr int kSplitThreads = 256;
constexpr int kMaxSplit = 32;       // the partials of a row fit one warp
constexpr int64_t kSplitIds = 4096;  // at least this many ids per slice

struct ArgmaxPart {
  float v;
  long long i;  // V: the slice held nothing
  float mx;     // fmax over the slice (NaN ignored), as the one-block pass computes the row's
};

// Slice s of S: multiples of 128 ids, so ordered_find's 16-byte loads stay aligned.
__device__ __forceinline__ void slice_of(int64_t V, int S, int s, int64_t& b, int64_t& e) {
  const int64_t chunk = ((V + S - 1) / S + 127) / 128 * 128;
  b = min(V, int64_t(s) * chunk);
  e = min(V, b + chunk);
}

__device__ __forceinline__ bool adjusted_row(const int32_t* adj_off, int64_t r) {
  return adj_off != nullptr && adj_off[r + 1] > adj_off[r];
}
__device__ __forceinline__ bool split_greedy(const int32_t* pw, const int32_t* adj_off, int64_t r) {
  return !(pw[11] & kSampleSkipRow) && __int_as_float(pw[0]) < sampling::kSamplingEps && !adjusted_row(adj_off, r);
}
// Written as the negations of the one-block path's tests, so NaN parameters go the same way.
__device__ __forceinline__ bool split_plain(const int32_t* pw, const int32_t* adj_off, int64_t r) {
  const float temperature = __int_as_float(pw[0]), top_p = __int_as_float(pw[1]), min_p = __int_as_float(pw[2]);
  return !(pw[11] & kSampleSkipRow) && !(temperature < sampling::kSamplingEps) && !(pw[3] > 0) && !(top_p < 1.f) &&
         !(min_p > 0.f) && !adjusted_row(adj_off, r);
}

// (v, i) replaces (best, bi) when larger, or equal with a lower id: the first index of the maximum.
__device__ __forceinline__ void argmax_merge(float& best, long long& bi, float v, long long i) {
  if (v > best || (v == best && i < bi)) {
    best = v;
    bi = i;
  }
}
__device__ __forceinline__ void argmax_warp(float& best, long long& bi) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) {
    const float ov = gpu_shfl_xor(best, m);
    const long long oi = gpu_shfl_xor(bi, m);
    argmax_merge(best, bi, ov, oi);
  }
}

__global__ void __launch_bounds__(kSplitThreads)
part_max_kernel(ArgmaxPart* part, const float* logits, int64_t ld, int64_t V, const int32_t* params, int64_t p_ld,
                const int32_t* adj_off, int S) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  const int64_t r = blockIdx.y;
  const int32_t* pw = params + r * p_ld;
  if (!split_greedy(pw, adj_off, r) && !split_plain(pw, adj_off, r)) return;
  __shared__ float wv[kSplitThreads / kWarpSize], wm[kSplitThreads / kWarpSize];
  __shared__ long long wi[kSplitThreads / kWarpSize];
  const float* row = logits + r * ld;
  int64_t b, e;
  slice_of(V, S, int(blockIdx.x), b, e);
  float best = -INFINITY, mx = -INFINITY;
  long long bi = V;
  for (int64_t j0 = b + threadIdx.x; j0 < e; j0 += int64_t(kLoads) * kSplitThreads) {
    float vals[kLoads];
    load_ahead(vals, row, j0, e, kSplitThreads);
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const int64_t j = j0 + int64_t(u) * kSplitThreads;
      if (j >= e) break;
      if (vals[u] > best || bi == V) {  // a thread's first id counts whatever its value (ARGMAX)
        best = vals[u];
        bi = j;
      }
      mx = fmaxf(mx, vals[u]);
    }
  }
  argmax_warp(best, bi);
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) mx = fmaxf(mx, gpu_shfl_xor(mx, m));
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) {
    wv[warp] = best;
    wi[warp] = bi;
    wm[warp] = mx;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kSplitThreads / kWarpSize; ++w) {
      argmax_merge(best, bi, wv[w], wi[w]);
      mx = fmaxf(mx, wm[w]);
    }
    part[r * S + blockIdx.x] = ArgmaxPart{best, bi, mx};
  }
}

// The row's argmax from its slices' parts: the first index of the maximum, 0 when the row held
// nothing (every thread of the calling warp gets it).
__device__ __forceinline__ long long row_argmax(const ArgmaxPart* part, int64_t r, int S, int64_t V) {
  const int lane = threadIdx.x % kWarpSize;
  float best = -INFINITY;
  long long bi = V;
  if (lane < S) {
    best = part[r * S + lane].v;
    bi = part[r * S + lane].i;
  }
  argmax_warp(best, bi);
  return bi >= V ? 0 : bi;
}
// The row's max from its slices' parts (every thread of the calling warp gets it).
__device__ __forceinline__ float row_max(const ArgmaxPart* part, int64_t r, int S) {
  const int lane = threadIdx.x % kWarpSize;
  float mx = lane < S ? part[r * S + lane].mx : -INFINITY;
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) mx = fmaxf(mx, gpu_shfl_xor(mx, m));
  return mx;
}

// Plain sampling rows: each slice's mass sum (RowCtx::mass of its finite logits, against the row's
// max), into mass[r * S + s]; 0 when the max is not finite (sample_kernel then takes the argmax).
__global__ void __launch_bounds__(kSplitThreads)
part_mass_kernel(u64* mass, const ArgmaxPart* part, const float* logits, int64_t ld, int64_t V, const int32_t* params,
                 int64_t p_ld, const int32_t* adj_off, int S, double fx_scale) {
  gpu_wait_for_predecessor();  // part_max_kernel's results
  gpu_allow_successor();
  const int64_t r = blockIdx.y;
  const int32_t* pw = params + r * p_ld;
  if (!split_plain(pw, adj_off, r)) return;
  __shared__ u64 ws[kSplitThreads / kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  RowCtx rc;
  rc.row = logits + r * ld;
  rc.V = V;
  rc.mx = row_max(part, r, S);
  rc.inv_t = 1.0f / __int_as_float(pw[0]);
  rc.fx_scale = fx_scale;
  u64 acc = 0;
  if (finite_f(rc.mx)) {
    int64_t b, e;
    slice_of(V, S, int(blockIdx.x), b, e);
    for (int64_t j0 = b + threadIdx.x; j0 < e; j0 += int64_t(kLoads) * kSplitThreads) {
      float vals[kLoads];
      load_ahead(vals, rc.row, j0, e, kSplitThreads);
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int64_t j = j0 + int64_t(u) * kSplitThreads;
        if (j < e && finite_f(vals[u])) acc += rc.mass(vals[u]);
      }
    }
  }
  acc = warp_sum_u64(acc);
  if (lane == 0) ws[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kSplitThreads / kWarpSize; ++w) acc += ws[w];
    mass[r * S + blockIdx.x] = acc;
  }
}

__global__ void __launch_bounds__(kThreads)
sample_kernel(int32_t* out, int64_t out_ld, float* logits, int64_t ld, int64_t V, const int32_t* params, int64_t p_ld,
              const int32_t* adj_off, const int32_t* adj, int64_t adj_ld, double fx_scale, const ArgmaxPart* part,
              const u64* mass, int S, bool vec_loads) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  __shared__ Shared sm;
  const int tid = threadIdx.x, lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int64_t r = blockIdx.x;
  const int32_t* pw = params + r * p_ld;
  const float temperature = __int_as_float(pw[0]), top_p = __int_as_float(pw[1]), min_p = __int_as_float(pw[2]);
  const int32_t top_k = pw[3];
  const uint64_t seed = uint64_t(uint32_t(pw[5])) << 32 | uint32_t(pw[4]);
  const uint64_t counter = uint64_t(uint32_t(pw[7])) << 32 | uint32_t(pw[6]);
  const float rep = __int_as_float(pw[8]), pres = __int_as_float(pw[9]), freq = __int_as_float(pw[10]);
  if (pw[11] & kSampleSkipRow) {
    if (tid == 0) out[r * out_ld] = -1;
    return;
  }
  if (S > 1 && split_greedy(pw, adj_off, r)) {  // part_max_kernel found each slice's maximum
    if (warp == 0) {
      const long long amax = row_argmax(part, r, S, V);
      if (lane == 0) out[r * out_ld] = int32_t(amax);
    }
    return;
  }
  float* row = logits + r * ld;
  if (S > 1 && split_plain(pw, adj_off, r)) {  // the part kernels read the slices
    if (warp == 0) {
      const long long amax = row_argmax(part, r, S, V);
      const float mx = row_max(part, r, S);
      const u64 m = lane < S ? mass[r * S + lane] : 0ull;
      const u64 total = warp_sum_u64(m);
      const u64 target = draw_target(sampling::uniform_at(seed, counter), total);
      // The slice where the running mass first exceeds the target: an inclusive scan over lanes.
      u64 incl = m;
#pragma unroll
      for (int o = 1; o < kWarpSize; o <<= 1) {
        const u64 y = gpu_shfl(incl, lane >= o ? lane - o : 0);
        if (lane >= o) incl += y;
      }
      int sel = -1;
      u64 before = 0;
      if (finite_f(mx) && target < total) {
        sel = warp_min_int(lane < S && incl > target ? lane : kWarpSize);
        before = gpu_shfl(incl - m, sel);
      }
      if (lane == 0) {
        sm.res = amax;
        sm.sel = sel;
        sm.sel_above = before;
        sm.warp_u64[0] = target;
        sm.warp_max[0] = mx;
      }
    }
    __syncthreads();
    const long long amax = sm.res;
    const int sel = sm.sel;
    const u64 before = sm.sel_above, target = sm.warp_u64[0];
    RowCtx rc;
    rc.row = row;
    rc.V = V;
    rc.mx = sm.warp_max[0];
    rc.inv_t = 1.0f / temperature;
    rc.fx_scale = fx_scale;
    __syncthreads();  // ordered_find reuses sm
    if (sel < 0) {
      if (tid == 0) out[r * out_ld] = int32_t(amax);
      return;
    }
    int64_t b, e;
    slice_of(V, S, sel, b, e);
    const int64_t pick = ordered_find(
        row, b, e, before, vec_loads && aligned_row(row),
        [&](float l, int64_t) -> u64 { return finite_f(l) ? rc.mass(l) : 0ull; }, [target](u64) { return target; }, sm);
    if (tid == 0) out[r * out_ld] = int32_t(pick >= 0 ? pick : amax);
    return;
  }

  // 1. Adjustments, one kind at a time (ids are distinct within a kind, so no two threads
  // update one element in a phase; mask entries may repeat but only store -inf).
  if (adj_off != nullptr) {
    const int64_t b = adj_off[r], e = adj_off[r + 1];
    if (e > b) {
      for (int kind = kAdjBias; kind <= kAdjCount; ++kind) {
        for (int64_t i = b + tid; i < e; i += kThreads) {
          const int32_t* a = adj + i * adj_ld;
          const int32_t id = a[0];
          if (a[1] != kind || id < 0 || id >= V) continue;
          float x = row[id];
          if (kind == kAdjBias) x = __fadd_rn(x, __int_as_float(a[2]));
          else if (kind == kAdjMask) x = -INFINITY;
          else if (kind == kAdjRepetition) x = x > 0.f ? __fdiv_rn(x, rep) : __fmul_rn(x, rep);
          else x = __fsub_rn(x, __fadd_rn(__fmul_rn(freq, float(a[2])), pres));
          row[id] = x;
        }
        __syncthreads();  // the phase's writes are visible to the whole block
      }
    }
  }

  // 2. argmax (first index of the maximum), max, finite min.
  float best = -INFINITY, mx = -INFINITY, mn = INFINITY;
  long long bi = V;  // "none yet": any real index wins
  const bool vec = vec_loads && aligned_row(row);
  if (vec) {  // ids in increasing order per thread, as in the scalar loop
    for (int64_t c0 = tid; 4 * c0 < V; c0 += int64_t(kVecLoads) * kThreads) {
      float4 q[kVecLoads];
      load_ahead4(q, row, c0, V, kThreads);
#pragma unroll
      for (int u = 0; u < kVecLoads; ++u) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t j = (c0 + int64_t(u) * kThreads) * 4 + e;
          if (j >= V) continue;
          const float v = lane_of(q[u], e);
          if (v > best || bi == V) {
            best = v;
            bi = j;
          }
          mx = fmaxf(mx, v);
          if (finite_f(v)) mn = fminf(mn, v);
        }
      }
    }
  } else {
    for (int64_t j0 = tid; j0 < V; j0 += int64_t(kLoads) * kThreads) {
      float vals[kLoads];
      load_ahead(vals, row, j0, V, kThreads);
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int64_t j = j0 + int64_t(u) * kThreads;
        if (j >= V) break;
        const float v = vals[u];
        if (v > best || bi == V) {
          best = v;
          bi = j;
        }
        mx = fmaxf(mx, v);
        if (finite_f(v)) mn = fminf(mn, v);
      }
    }
  }
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) {
    mx = fmaxf(mx, gpu_shfl_xor(mx, m));
    mn = fminf(mn, gpu_shfl_xor(mn, m));
  }
  argmax_warp(best, bi);
  if (lane == 0) {
    sm.warp_best[warp] = best;
    sm.warp_idx[warp] = bi;
    sm.warp_max[warp] = mx;
    sm.warp_min[warp] = mn;
  }
  __syncthreads();
  best = sm.warp_best[0];
  bi = sm.warp_idx[0];
  mx = sm.warp_max[0];
  mn = sm.warp_min[0];
  for (int w = 1; w < kNW; ++w) {
    argmax_merge(best, bi, sm.warp_best[w], sm.warp_idx[w]);
    mx = fmaxf(mx, sm.warp_max[w]);
    mn = fminf(mn, sm.warp_min[w]);
  }
  const int32_t amax = int32_t(bi >= V ? 0 : bi);
  if (temperature < sampling::kSamplingEps || !finite_f(mx)) {
    if (tid == 0) out[r * out_ld] = amax;
    return;
  }

  // 3. Filters.
  RowCtx rc;
  rc.row = row;
  rc.V = V;
  rc.vec = vec;
  rc.mx = mx;
  rc.inv_t = 1.0f / temperature;
  rc.min_p = min_p;
  rc.vb_scale = mx > mn ? 255.99f / (mx - mn) : 0.f;
  rc.fx_scale = fx_scale;
  const auto in0 = [&](float l, int64_t) { return rc.eligible(l); };
  Cut ck;
  if (top_k > 0) ck = select_cut<false>(rc, in0, u64(top_k), sm);
  const auto in1 = [&](float l, int64_t j) {
    return rc.eligible(l) && kept(ck, rc.vbin(l), sampling::order_key(l), j);
  };
  Cut cp;
  if (top_p < 1.f) {
    u64 acc = 0;
    for (int64_t j0 = tid; j0 < V; j0 += int64_t(kLoads) * kThreads) {
      float ls[kLoads];
      load_ahead(ls, row, j0, V, kThreads);
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int64_t j = j0 + int64_t(u) * kThreads;
        if (j < V && in1(ls[u], j)) acc += rc.mass(ls[u]);
      }
    }
    const u64 total = block_sum_u64(acc, sm);
    u64 T = u64(ceil(double(top_p) * double(total)));
    if (T < 1) T = 1;
    if (total > 0) cp = select_cut<true>(rc, in1, T, sm);
  }

  // 4. The draw, in id order.
  const double u = sampling::uniform_at(seed, counter);
  const int64_t pick = ordered_find(
      row, 0, V, 0, rc.vec,
      [&](float l, int64_t j) -> u64 {
        return (in1(l, j) && kept(cp, rc.vbin(l), sampling::order_key(l), j)) ? rc.mass(l) : 0ull;
      },
      [u](u64 total) { return draw_target(u, total); },
      sm);
  if (tid == 0) out[r * out_ld] = int32_t(pick >= 0 ? pick : amax);
}

void sample(const SampleArgs& a, Stream& s) {
  const int64_t B = a.logits.size(0), V = a.logits.size(1);
  if (B == 0 || V == 0) return;
  int bits = 0;
  while ((int64_t(1) << bits) < V) ++bits;
  const double fx_scale = std::ldexp(1.0, 62 - bits);  // V * 2^s <= 2^62
  const int32_t* off = a.adj_offsets.defined() && a.adj.defined() ? a.adj_offsets.ptr<int32_t>() : nullptr;
  const int32_t* adj = off ? a.adj.ptr<int32_t>() : nullptr;
  // Greedy and plain sampling rows are split over slices (see part_max_kernel) so that every SM
  // has a few 256-thread blocks; PORTLLM_SAMPLE_SPLIT=0 keeps one block per row (A/B runs).
  static const bool split = env_switch("PORTLLM_SAMPLE_SPLIT", {"0", "1"}, 1) == 1;
  // PORTLLM_SAMPLE_VEC=0 keeps the single-float loads of the full passes (A/B runs).
  static const bool vec_loads = env_switch("PORTLLM_SAMPLE_VEC", {"0", "1"}, 1) == 1;
  const int64_t sms = std::max(1, caps_of(s).num_compute_units);
  const int S = split ? int(std::min<int64_t>({kMaxSplit, (V + kSplitIds - 1) / kSplitIds, std::max<int64_t>(1, 8 * sms / B)}))
                      : 1;
  std::shared_ptr<void> part_mem;
  ArgmaxPart* part = nullptr;
  u64* mass = nullptr;
  if (S > 1) {
    const size_t n = size_t(B) * size_t(S);
    part_mem = scratch(s, (sizeof(ArgmaxPart) + sizeof(u64)) * n);  // stream-ordered reuse after the kernels
    part = static_cast<ArgmaxPart*>(part_mem.get());
    mass = reinterpret_cast<u64*>(part + n);
    launch_programmatic(s, part_max_kernel, dim3(unsigned(S), unsigned(B)), dim3(kSplitThreads), 0, part,
                        a.logits.ptr<float>(), a.logits.strides[0], V, a.params.ptr<int32_t>(), a.params.strides[0],
                        off, S);
    check_launch("sample (slice maxima)");
    launch_programmatic(s, part_mass_kernel, dim3(unsigned(S), unsigned(B)), dim3(kSplitThreads), 0, mass,
                        static_cast<const ArgmaxPart*>(part), a.logits.ptr<float>(), a.logits.strides[0], V,
                        a.params.ptr<int32_t>(), a.params.strides[0], off, S, fx_scale);
    check_launch("sample (slice masses)");
  }
  launch_programmatic(s, sample_kernel, dim3(unsigned(B)), dim3(kThreads), 0, a.out.ptr<int32_t>(), a.out.strides[0],
                      a.logits.ptr<float>(), a.logits.strides[0], V, a.params.ptr<int32_t>(), a.params.strides[0], off,
                      adj, adj ? a.adj.strides[0] : 0, fx_scale, static_cast<const ArgmaxPart*>(part),
                      static_cast<const u64*>(mass), S, vec_loads);
  check_launch("sample");
}

}  // namespace

void register_sampling_kernels() {
  register_kernel<SampleArgs>(Op::SAMPLE, kKind, "gpu.sample", 10,
                              [](const OpDesc& d, const DeviceCaps&) { return d.dtype[0] == DType::F32; }, sample);
}

}  // namespace portllm::gpu
