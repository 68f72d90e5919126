// Device helpers shared by the portable kernels: dtype loads/stores through float, warp and block
// reductions written against kWarpSize, and a dtype dispatcher for launchers. Portable CUDA C++
// only (no PTX): MUSA compiles these files unchanged.
#pragma once
#include <cstdint>

#include "backends/gpu/fp8.cuh"
#include "backends/gpu/gpu_runtime.h"
#include "backends/gpu/vendor/vendor.h"
#include "core/dtype.h"

namespace portllm::gpu {

template <class T> __device__ __forceinline__ float ld(const T* p, int64_t i);
template <> __device__ __forceinline__ float ld<float>(const float* p, int64_t i) { return p[i]; }
template <> __device__ __forceinline__ float ld<gpu_bf16>(const gpu_bf16* p, int64_t i) { return gpu_bf16_to_f32(p[i]); }
template <> __device__ __forceinline__ float ld<gpu_half>(const gpu_half* p, int64_t i) { return gpu_half_to_f32(p[i]); }
template <> __device__ __forceinline__ float ld<gpu_fp8>(const gpu_fp8* p, int64_t i) { return f8e4m3_to_f32(p[i].bits); }

template <class T> __device__ __forceinline__ T cvt(float v);
template <> __device__ __forceinline__ float cvt<float>(float v) { return v; }
template <> __device__ __forceinline__ gpu_bf16 cvt<gpu_bf16>(float v) { return gpu_f32_to_bf16(v); }
template <> __device__ __forceinline__ gpu_half cvt<gpu_half>(float v) { return gpu_f32_to_half(v); }
// fp8 is only ever a KV cache here, whose writes saturate (core/dtype.h f32_to_f8e4m3_satfinite).
template <> __device__ __forceinline__ gpu_fp8 cvt<gpu_fp8>(float v) { return gpu_fp8{f32_to_f8e4m3_satfinite(v)}; }

// A 16-byte weight vector of a weight-streaming kernel (the decode GEMVs): with the evict-first L2
// policy of the vendor header when `evict_first` (env_switch.h: l2_evict_first()), else the plain
// load. `policy` is gpu_stream_policy(), made once per thread.
__device__ __forceinline__ uint4 load_weight16(const void* p, bool evict_first, unsigned long long policy) {
  return evict_first ? gpu_load_stream(p, policy) : *reinterpret_cast<const uint4*>(p);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) v += gpu_shfl_xor(v, m);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) v = fmaxf(v, gpu_shfl_xor(v, m));
  return v;
}

// Sum over the block (blockDim.x a multiple of kWarpSize, at most 32 warps); every thread gets it.
__device__ __forceinline__ float block_sum(float v, float* smem /* >= 32 floats */) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int nwarps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  float t = 0;
  for (int w = 0; w < nwarps; ++w) t += smem[w];
  return t;
}
__device__ __forceinline__ float block_max(float v, float* smem) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int nwarps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  float t = -INFINITY;
  for (int w = 0; w < nwarps; ++w) t = fmaxf(t, smem[w]);
  return t;
}

// The 8 values of a 16-byte vector of bf16 or f16, widened to float (f points at 8 floats).
template <class T> __device__ __forceinline__ void unpack8(const uint4& v, float* f);
template <> __device__ __forceinline__ void unpack8<gpu_bf16>(const uint4& v, float* f) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}
template <> __device__ __forceinline__ void unpack8<gpu_half>(const uint4& v, float* f) {
  const gpu_half* h = reinterpret_cast<const gpu_half*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = gpu_half_to_f32(h[i]);
}

template <class T> struct Tag { using type = T; };

// Element n of an optional bias vector of dtype t (f32, bf16 or f16) as float; 0 without one.
__device__ __forceinline__ float bias_value(const void* bias, DType t, int64_t n) {
  if (!bias) return 0.f;
  if (t == DType::F32) return static_cast<const float*>(bias)[n];
  if (t == DType::BF16) return gpu_bf16_to_f32(static_cast<const gpu_bf16*>(bias)[n]);
  return gpu_half_to_f32(static_cast<const gpu_half*>(bias)[n]);
}

// Calls fn(Tag<T>{}) with T the device type of a float dtype (f32, bf16, f16).
template <class Fn>
void dispatch_float(DType t, Fn&& fn) {
  switch (t) {
    case DType::F32: fn(Tag<float>{}); break;
    case DType::BF16: fn(Tag<gpu_bf16>{}); break;
    case DType::F16: fn(Tag<gpu_half>{}); break;
    default: fail("unsupported dtype (expected f32, bf16 or f16)");
  }
}

inline bool is_gpu_float(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

// KV caches: the float dtypes and e4m3 (--kv-dtype fp8, written saturating).
inline bool is_gpu_cache(DType t) { return is_gpu_float(t) || t == DType::F8E4M3; }
template <class Fn>
void dispatch_cache(DType t, Fn&& fn) {
  if (t == DType::F8E4M3) fn(Tag<gpu_fp8>{});
  else dispatch_float(t, fn);
}

// Row r of a 2-D [R, C] or 3-D [A, B, C] view (last dim contiguous) starts at
// (r / n1) * s0 + (r % n1) * s1 elements.
struct Rows {
  int64_t n1 = 1, s0 = 0, s1 = 0;
  __host__ __device__ int64_t off(int64_t r) const { return (r / n1) * s0 + (r % n1) * s1; }
};

}  // namespace portllm::gpu
