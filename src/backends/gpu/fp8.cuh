// f8_e4m3 (e4m3fn: bias 7, no Inf, 0x7f/0xff NaN) decode on the device, bit for bit the host's
// core/dtype.h f8e4m3_to_f32. Plain integer and float code, so it runs on any vendor without an
// fp8 header or fp8 units; the GEMM kernels dequantize weight tiles with it while loading them.
#pragma once
#include <cstdint>

#include "backends/gpu/vendor/vendor.h"

namespace portllm::gpu {

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

}  // namespace portllm::gpu
