// What the weight-streaming MoE kernels share (moe_gemv.cu: MOE_GEMM at decode sizes;
// moe_down_combine.cu: MOE_DOWN_COMBINE): 16-byte weight loads widened to float (fp8 exactly, as
// 256 x its value), the element-wise weight load on the same scale, and the shared-memory layout
// of staged activations that makes each lane's float4 reads conflict-free. Portable CUDA C++.
#pragma once
#include <cstdint>
#include <type_traits>

#include "backends/gpu/fp8.cuh"
#include "backends/gpu/vendor/fp8_convert.h"
#include "backends/gpu/kernel_common.cuh"

namespace portllm::gpu {
namespace {

__device__ __forceinline__ uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Four e4m3 bytes (byte i = value i) as 256 x their value, bit-exact (core/fp8_e4m3.h). Kept out of line:
// it is the rare path of fp8x4_times256, and inlined into every decode it would multiply the
// streaming loop's code size.
__device__ __noinline__ float4 fp8x4_times256_exact(uint32_t w) {
  return make_float4(f8e4m3_to_f32(uint8_t(w)) * 256.f, f8e4m3_to_f32(uint8_t(w >> 8)) * 256.f,
                     f8e4m3_to_f32(uint8_t(w >> 16)) * 256.f, f8e4m3_to_f32(uint8_t(w >> 24)) * 256.f);
}

// Four e4m3 bytes as 256 x their value, exactly. A normal e4m3 (exponent field E > 0) is the f32
// with exponent field 128 + E and the same 3 mantissa bits, i.e. 2^8 times its value: per byte
// one shift to the top, an arithmetic shift that lands sign, E and mantissa, and one mask-or. No
// f32 subnormal is formed, so flush-to-zero builds stay exact. A word holding a zero or
// subnormal (E == 0) or a NaN (0x7f / 0xff) takes the bit-exact decoder (rare in real weights).
// The kernels multiply their sums by 2^-8 (exact) at the end.
// Where the device converts e4m3 pairs to f16 itself (sm_89+), that conversion and f16 -> f32
// instead: ~2.5 instructions per value against ~4 (the fp8 GEMVs are bound by these instructions).
__device__ __forceinline__ void fp8x4_times256(uint32_t w, float* f) {
  uint32_t lo, hi;
  if (gpu_e4m3x4_to_f16x4(w, lo, hi)) {
    const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&lo));
    const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&hi));
    f[0] = a.x * 256.f;
    f[1] = a.y * 256.f;
    f[2] = b.x * 256.f;
    f[3] = b.y * 256.f;
    return;
  }
  const uint32_t e_zero = (w & 0x78787878u) - 0x01010101u;  // bit 7 of a byte set <=> some E == 0
  const uint32_t nan = (w & 0x7f7f7f7fu) + 0x01010101u;     // bit 7 of a byte set <=> it is a NaN
  if ((e_zero | nan) & 0x80808080u) {
    const float4 v = fp8x4_times256_exact(w);
    f[0] = v.x;
    f[1] = v.y;
    f[2] = v.z;
    f[3] = v.w;
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int32_t top = int32_t(w << (24 - 8 * i));  // byte i in bits 31..24
    f[i] = __uint_as_float((uint32_t(top >> 4) & 0x87f00000u) | 0x40000000u);
  }
}

// How the weights of one load become floats. The 16-byte path: a uint4 of V values, taken 4 at a
// time (group g = values 4g..4g+3, the x of one float4). fp8 values come out times 256.
template <class TW> struct WVec;
template <> struct WVec<gpu_bf16> {
  static constexpr int V = 8;
  static __device__ __forceinline__ void group(const uint4& v, int g, float* f) {
    const uint32_t a = word(v, 2 * g), b = word(v, 2 * g + 1);
    f[0] = __uint_as_float(a << 16);
    f[1] = __uint_as_float(a & 0xffff0000u);
    f[2] = __uint_as_float(b << 16);
    f[3] = __uint_as_float(b & 0xffff0000u);
  }
};
template <> struct WVec<gpu_half> {
  static constexpr int V = 8;
  static __device__ __forceinline__ void group(const uint4& v, int g, float* f) {
    const gpu_half* h = reinterpret_cast<const gpu_half*>(&v) + 4 * g;
#pragma unroll
    for (int i = 0; i < 4; ++i) f[i] = gpu_half_to_f32(h[i]);
  }
};
template <> struct WVec<float> {
  static constexpr int V = 4;
  static __device__ __forceinline__ void group(const uint4& v, int, float* f) {
    f[0] = __uint_as_float(v.x);
    f[1] = __uint_as_float(v.y);
    f[2] = __uint_as_float(v.z);
    f[3] = __uint_as_float(v.w);
  }
};
template <> struct WVec<uint8_t> {
  static constexpr int V = 16;
  static __device__ __forceinline__ void group(const uint4& v, int g, float* f) { fp8x4_times256(word(v, g), f); }
};

// One weight of the element-wise path, on the same scale as WVec (fp8 times 256).
__device__ __forceinline__ float wval(float v) { return v; }
__device__ __forceinline__ float wval(gpu_bf16 v) { return gpu_bf16_to_f32(v); }
__device__ __forceinline__ float wval(gpu_half v) { return gpu_half_to_f32(v); }
__device__ __forceinline__ float wval(uint8_t v) { return f8e4m3_to_f32(v) * 256.f; }

// Where x element kk of a staged row lives (row stride kc_stride floats, a multiple of 16). With
// XV = 8 or 16 (bf16/f16 or fp8 vectors) a lane's XV values are split into XV / 4 float4 groups,
// group g of every lane in its own contiguous run: lanes read consecutive float4s (no bank
// conflicts) instead of float4s XV floats apart. XV = 4 is the plain layout. Four consecutive kk
// from a multiple of 4 land in four consecutive floats (a float4 store).
template <int XV>
__device__ __forceinline__ int x_slot(int kk, int kc_stride) {
  constexpr int G = XV / 4;
  if constexpr (G == 1) {
    return kk;
  } else {
    const int q = kk % XV;
    return (q / 4) * (kc_stride / G) + 4 * (kk / XV) + q % 4;
  }
}

template <class Fn>
void dispatch_weight(DType t, Fn&& fn) {
  if (t == DType::F8E4M3) fn(Tag<uint8_t>{});
  else dispatch_float(t, fn);
}

}  // namespace
}  // namespace portllm::gpu
