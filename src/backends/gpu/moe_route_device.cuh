// MoE routing on the device: the warp argmax helpers of moe.cu's routing kernels, and the plain
// softmax router (MOE_ROUTE_SOFTMAX's math) as a block-wide device function (route_block_kernel
// runs it; an expert kernel could too).
// Portable CUDA C++, any kWarpSize.
#pragma once
#include <cmath>

#include "backends/gpu/kernel_common.cuh"

namespace portllm::gpu {

// (ov, oi) replaces (bv, bi) if it is valid and better: higher value, ties -> lower index.
__device__ __forceinline__ void arg_better(double ov, int oi, double& bv, int& bi) {
  if (oi >= 0 && (bi < 0 || ov > bv || (ov == bv && oi < bi))) {
    bv = ov;
    bi = oi;
  }
}
// Every lane ends with the warp's best (value, index).
__device__ __forceinline__ void warp_argmax(double& bv, int& bi) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) {
    const double ov = gpu_shfl_xor(bv, m);
    const int oi = gpu_shfl_xor(bi, m);
    arg_better(ov, oi, bv, bi);
  }
}
__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) v += gpu_shfl_xor(v, m);
  return v;
}
__device__ __forceinline__ double warp_max_d(double v) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) v = fmax(v, gpu_shfl_xor(v, m));
  return v;
}

constexpr int kMaxRouteWarps = 32;  // warps per block route_softmax_block takes
constexpr int kMaxRouteK = 64;      // choices the callers' shared arrays hold
// The shared memory route_softmax_block takes, in doubles.
__host__ __device__ constexpr int route_scratch_doubles(int E, int top_k) { return 2 * E + kMaxRouteWarps + 1 + top_k; }

// The plain router for one token, run by a whole block (every thread calls it): softmax over the E
// logits in double, the top_k best (ties: lower id; NaN ranks last), weights = the chosen scores,
// divided by their sum when renormalize, times scale. Bit for bit the math of moe.cu's route
// kernels with one group and no bias: the same operations, the same summation order (lane l of
// one warp adds experts l, l + kWarpSize, ... in that order, then a butterfly; the chosen scores
// in choice order), and the choice of k rounds of argmax, taken here as ranks: expert e is choice
// r when r experts beat it (a higher score, or an equal one and a lower id). The ranks are
// computed by all threads at once, one pass over the scores each, instead of k dependent rounds
// of warp shuffles, and they compare the scores' bits as integers: with double compares the
// same pass was ~1 us slower per call on the H200 (BENCHMARKS.md, twelfth session).
// logit(e) returns expert e's logit (the caller chooses how it is loaded). Shared memory: sc (2 E
// doubles: the scores, then their rank keys), red (kMaxRouteWarps + 1 doubles), chosen (top_k
// doubles). On return (after a barrier) ids[j] and wts[j], j < top_k, hold choice j.
template <class Logit>
__device__ __forceinline__ void route_softmax_block(const Logit& logit, int E, int top_k, bool renormalize, float scale,
                                                    double* sc, double* red, double* chosen, int* ids, float* wts) {
  const int tid = int(threadIdx.x), nt = int(blockDim.x), lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int nw = (nt + kWarpSize - 1) / kWarpSize;
  double m = -INFINITY;
  for (int e = tid; e < E; e += nt) {
    const double v = double(logit(e));
    sc[e] = v;
    m = fmax(m, v);
  }
  m = warp_max_d(m);
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < nw; ++w) m = fmax(m, red[w]);
  for (int e = tid; e < E; e += nt) sc[e] = exp(sc[e] - m);
  __syncthreads();
  if (warp == 0) {  // the sum in the warp kernels' order
    double sum = 0;
    for (int e = lane; e < E; e += kWarpSize) sum += sc[e];
    sum = warp_sum_d(sum);
    if (lane == 0) red[kMaxRouteWarps] = sum;
  }
  __syncthreads();
  const double sum = red[kMaxRouteWarps];
  // Rank keys: the scores' bits as integers (order-preserving for scores >= +0), NaN lowest, so
  // the rank loop compares integers instead of doubles. key holds E int64 after sc.
  long long* key = reinterpret_cast<long long*>(sc + E);
  for (int e = tid; e < E; e += nt) {
    const double s = sc[e] / sum;
    sc[e] = s;
    key[e] = isnan(s) ? -1ll : __double_as_longlong(s);
  }
  __syncthreads();
  for (int e = tid; e < E; e += nt) {
    const long long k0 = key[e];
    int rank = 0;
#pragma unroll 8
    for (int o = 0; o < E; ++o) {
      const long long ko = key[o];
      rank += (ko > k0 || (ko == k0 && o < e)) ? 1 : 0;
    }
    if (rank < top_k) {
      ids[rank] = e;
      chosen[rank] = sc[e];
    }
  }
  __syncthreads();
  if (tid < top_k) {
    double csum = 0;  // in choice order, as the warp kernels add them
    for (int j = 0; j < top_k; ++j) csum += chosen[j];
    wts[tid] = float((renormalize ? chosen[tid] / csum : chosen[tid]) * double(scale));
  }
  __syncthreads();
}

}  // namespace portllm::gpu
