// f8_e4m3 (e4m3fn: bias 7, no Inf, 0x7f/0xff NaN) on the device, bit for bit the host's core/dtype.h
// conversions: the decode (the GEMM kernels dequantize weight tiles with it while loading them) and
// the saturating encode of the fp8 KV cache's writes (f32_to_f8e4m3_satfinite). Plain integer and
// float code, so it runs on any vendor without an fp8 header or fp8 units.
#pragma once
#include <cstdint>

#include "backends/gpu/vendor/vendor.h"

namespace portllm::gpu {

// One e4m3 value in memory: the device type of DType::F8E4M3 caches (kernel_common.cuh's ld / cvt
// and vec_io.cuh's vectors take it like the 16-bit types).
struct gpu_fp8 {
  uint8_t bits;
};

__device__ __forceinline__ float fp8e4m3_to_f32(uint8_t v) {
  const uint32_t sign = uint32_t(v & 0x80u) << 24;
  const uint32_t exp = (v >> 3) & 0xfu;
  const uint32_t mant = v & 0x7u;
  if (exp == 0xfu && mant == 0x7u) return __uint_as_float(sign | 0x7fc00000u);  // the only NaN
  if (exp == 0u) {
    const float r = float(mant) * (1.f / 512.f);  // subnormal: mant * 2^-6 / 8 (exact)
    return sign ? -r : r;
  }
  return __uint_as_float(sign | ((exp + 120u) << 23) | (mant << 20));
}

// Round to nearest even, saturating at +-448 (NaN stays NaN): core/dtype.cpp's
// f32_to_f8e4m3_satfinite, step for step. Below 2^-6 the rounding is a float addition that aligns
// bit 0 of the sum's mantissa with 2^-9 (the sum is a normal float, so flush-to-zero builds agree).
__device__ __forceinline__ uint8_t f32_to_fp8e4m3_satfinite(float f) {
  uint32_t u = __float_as_uint(f);
  const uint8_t sign = uint8_t((u >> 24) & 0x80u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return uint8_t(sign | 0x7fu);  // NaN
  u = u < 0x43e00000u ? u : 0x43e00000u;              // |f| past 448 (Inf too): 448
  if (u < (121u << 23)) {
    const uint32_t denorm = 141u << 23;
    return uint8_t(sign | uint8_t(__float_as_uint(__uint_as_float(u) + __uint_as_float(denorm)) - denorm));
  }
  const uint32_t mant_odd = (u >> 20) & 1u;
  u += (uint32_t(7 - 127) << 23) + 0x7ffffu + mant_odd;
  return uint8_t(sign | uint8_t(u >> 20));
}

}  // namespace portllm::gpu
