// The split-KV merges of the tensor-core decode attention (attention_decode_mma.cu): the last
// block of a (sequence, KV head, row tile) merging every split's partial from global memory
// (merge_splits), and the cluster form's blocks merging through distributed shared memory
// (cluster_merge). NVIDIA-only like their kernel (cp.async, clusters: ARCHITECTURE.md rule 4).
#pragma once
#if defined(PORTLLM_GPU_MUSA)
#error "attention_decode_merge.cuh is NVIDIA-only"
#endif
#include "backends/gpu/attention_common.cuh"
#include "backends/gpu/cluster_sm90.cuh"
#include "backends/gpu/mma_sm80.cuh"

namespace portllm::gpu {

constexpr int kMaxCluster = 16;  // blocks per cluster in the cluster form (Hopper's non-portable maximum)

// R: query rows per block; kSmem: the block's shared memory, reused to stage the partials.
// The merging block's share of the work: out = sum_s w_s o_s / sum_s w_s l_s with
// w_s = 2^(m_s - M), over every split s in split order (deterministic whichever block arrives
// last). Partial outputs are staged in shared memory with cp.async (L2 only: other blocks wrote
// them, and L1 is not coherent), as many splits at a time as fit, so all of a chunk's loads are in
// flight together; the weights are computed while they land.
template <class T, int D, int W, int R, size_t kSmem>
__device__ __forceinline__ void merge_splits(const AttnParams& p, unsigned char* smem_raw, float* s_L, int b, int qrow,
                                             int h0, int ng, int ns) {
  using namespace sm80;
  constexpr int V4 = D / 4, kThreads = W * 32;  // float4 per output row; threads per block
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int64_t row0 = (int64_t(b) * p.Hq + h0) * p.splits;  // partial row of (head h0, split 0)
  float* sw = reinterpret_cast<float*>(smem_raw);      // [ng][ns] weights
  const int wfloats = (ng * ns + 3) & ~3;
  float* so = sw + wfloats;  // [ng][chunk][D] partial outputs
  const int cap = (int(kSmem / 4) - wfloats) / (ng * D);

  auto stage = [&](int s0, int n) {
    for (int g = 0; g < ng; ++g) {
      const float* src = p.part_o + (row0 + int64_t(g) * p.splits + s0) * D;  // n * D contiguous floats
      float* dst = so + size_t(g) * n * D;
      for (int i = tid; i < n * V4; i += kThreads) cp_async16(dst + i * 4, src + i * 4, 16);
    }
    cp_async_commit();
  };
  stage(0, min(cap, ns));

  for (int g = warp; g < ng; g += W) {
    const float2* ml = reinterpret_cast<const float2*>(p.part_ml) + row0 + int64_t(g) * p.splits;
    float2 v[kMaxSplits / 32];
    float mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < kMaxSplits / 32; ++k) {
      const int s = k * 32 + lane;
      v[k] = s < ns ? __ldcg(ml + s) : make_float2(-INFINITY, 0.f);
      if (v[k].y > 0.f) mx = fmaxf(mx, v[k].x);
    }
    mx = warp_max(mx);
    float lsum = 0.f;
#pragma unroll
    for (int k = 0; k < kMaxSplits / 32; ++k) {
      const int s = k * 32 + lane;
      const float w = v[k].y > 0.f ? exp2f(v[k].x - mx) : 0.f;  // empty splits weigh nothing
      if (s < ns) sw[g * ns + s] = w;
      lsum += v[k].y * w;
    }
    lsum = warp_sum(lsum);
    if (lane == 0) s_L[g] = lsum;
  }

  // Each thread owns float4 columns (row g, dims 4c..4c+3): items tid, tid + 128, ...
  constexpr int kItems = R * V4 / kThreads;
  float4 acc[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int s0 = 0; s0 < ns; s0 += cap) {
    const int n = min(cap, ns - s0);
    if (s0 > 0) stage(s0, n);
    cp_async_wait<0>();
    __syncthreads();  // the chunk and the weights are visible to every thread
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int item = tid + k * kThreads;
      if (item < ng * V4) {
        const int g = item / V4, c = item % V4;
        const float* w = sw + g * ns + s0;
        const float4* o = reinterpret_cast<const float4*>(so + size_t(g) * n * D) + c;
        for (int s = 0; s < n; ++s) {
          const float4 x = o[s * V4];
          acc[k].x += w[s] * x.x;
          acc[k].y += w[s] * x.y;
          acc[k].z += w[s] * x.z;
          acc[k].w += w[s] * x.w;
        }
      }
    }
    __syncthreads();  // the next chunk overwrites so
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int item = tid + k * kThreads;
    if (item < ng * V4) {
      const int g = item / V4, c = item % V4;
      const float inv = s_L[g] > 0.f ? 1.f / s_L[g] : 0.f;
      T* orow = static_cast<T*>(p.out) + int64_t(qrow) * p.o_s0 + int64_t(h0 + g) * p.o_s1 + c * 4;
      orow[0] = cvt<T>(acc[k].x * inv);
      orow[1] = cvt<T>(acc[k].y * inv);
      orow[2] = cvt<T>(acc[k].z * inv);
      orow[3] = cvt<T>(acc[k].w * inv);
    }
  }
}

// The cluster form's merge: the C blocks (splits) of one cluster hold their partials in shared
// memory (s_part [rows][D] unnormalized outputs, s_bm / s_bl each row's max and sum); block r
// merges outputs [r * per, (r + 1) * per) of the ng x D, reading every block's values through
// distributed shared memory, in split order (deterministic).
template <class T, int D, int W>
__device__ __forceinline__ void cluster_merge(const AttnParams& p, const float* s_part, const float* s_bm,
                                              const float* s_bl, int qrow, int h0, int ng) {
  using namespace sm90;
  cluster_sync();  // every block's partial is in its shared memory
  const int C = p.splits, rank = int(cluster_rank());
  const int total = ng * D, per = (total + C - 1) / C, end = min(total, (rank + 1) * per);
  for (int idx = rank * per + int(threadIdx.x); idx < end; idx += W * 32) {
    const int g = idx / D, d = idx % D;
    float m[kMaxCluster], l[kMaxCluster], o[kMaxCluster];
#pragma unroll
    for (int r = 0; r < kMaxCluster; ++r) {  // all loads in flight together
      const bool in = r < C;
      m[r] = in ? cluster_load(cluster_map(s_bm + g, unsigned(r))) : -INFINITY;
      l[r] = in ? cluster_load(cluster_map(s_bl + g, unsigned(r))) : 0.f;
      o[r] = in ? cluster_load(cluster_map(s_part + size_t(g) * D + d, unsigned(r))) : 0.f;
    }
    float M = -INFINITY;
#pragma unroll
    for (int r = 0; r < kMaxCluster; ++r)
      if (l[r] > 0.f) M = fmaxf(M, m[r]);
    float L = 0.f, acc = 0.f;
#pragma unroll
    for (int r = 0; r < kMaxCluster; ++r)
      if (l[r] > 0.f) {  // splits without keys weigh nothing
        const float e = exp2f(m[r] - M);
        L += l[r] * e;
        acc += o[r] * e;
      }
    T* orow = static_cast<T*>(p.out) + int64_t(qrow) * p.o_s0 + int64_t(h0 + g) * p.o_s1;
    orow[d] = cvt<T>(L > 0.f ? acc / L : 0.f);
  }
  cluster_sync();  // no block leaves (its shared memory with it) while another still reads it
}

}  // namespace portllm::gpu
