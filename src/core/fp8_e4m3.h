// f8_e4m3fn (bias 7, no infinities, 0x7f / 0xff the only NaNs) to and from f32, exactly, for the
// host and the GPU kernels alike (PL_HD): the KV cache's saturating writes must give the same
// byte on every backend, and the GEMM kernels decode weights as the reference does.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace portllm {

namespace fp8_detail {
PL_HD inline uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
PL_HD inline float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
}  // namespace fp8_detail

PL_HD inline float f8e4m3_to_f32(uint8_t v) {
  const uint32_t sign = uint32_t(v & 0x80u) << 24;
  const uint32_t exp = (v >> 3) & 0xfu;
  const uint32_t mant = v & 0x7u;
  if (exp == 0xfu && mant == 0x7u) return fp8_detail::from_bits(sign | 0x7fc00000u);  // the only NaN
  if (exp == 0u) {
    const float r = float(mant) * (1.f / 512.f);  // subnormal: mant * 2^-6 / 8 (exact)
    return sign ? -r : r;
  }
  return fp8_detail::from_bits(sign | ((exp + 120u) << 23) | (mant << 20));
}

// PyTorch's cast (c10::Float8_e4m3fn): round to nearest even; |x| > 464 (the first value that
// rounds past 448), Inf and NaN become NaN.
PL_HD inline uint8_t f32_to_f8e4m3(float f) {
  uint32_t u = fp8_detail::bits(f);
  const uint8_t sign = uint8_t((u >> 24) & 0x80u);
  u &= 0x7fffffffu;
  uint8_t r;
  if (u >= (1087u << 20)) {  // >= 480.0 (first value that rounds past 448), Inf and NaN
    r = 0x7f;
  } else if (u < (121u << 23)) {  // below 2^-6: subnormal range, rounded by a float addition
    // that aligns bit 0 of the sum's mantissa with 2^-9 (the sum is a normal float, so
    // flush-to-zero builds agree).
    const uint32_t denorm_mask = 141u << 23;
    r = uint8_t(fp8_detail::bits(fp8_detail::from_bits(u) + fp8_detail::from_bits(denorm_mask)) - denorm_mask);
  } else {
    const uint32_t mant_odd = (u >> 20) & 1u;
    u += (uint32_t(7 - 127) << 23) + 0x7ffffu + mant_odd;
    r = uint8_t(u >> 20);
  }
  return r | sign;
}

// The saturating cast (CUDA's __NV_SATFINITE): |x| beyond the largest finite e4m3, 448, becomes
// +-448 instead of NaN; NaN stays NaN. An fp8 KV cache stores this way (as vLLM's does), so that
// an outlier key or value is clipped rather than poisoning every score it enters.
PL_HD inline uint8_t f32_to_f8e4m3_satfinite(float f) {
  constexpr float kMax = 448.f;
  if (f > kMax) return f32_to_f8e4m3(kMax);
  if (f < -kMax) return f32_to_f8e4m3(-kMax);
  return f32_to_f8e4m3(f);  // NaN fails both compares: it stays NaN
}

}  // namespace portllm
