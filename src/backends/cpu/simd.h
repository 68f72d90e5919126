// Small AVX2 helpers shared by the CPU kernels: widen bf16/f16/fp8 values to f32, dot products.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"

namespace portllm::cpu {

inline __m256 load8_bf16(const uint16_t* p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline __m256 load8_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

inline const float* fp8_lut() {
  static const std::vector<float> lut = [] {
    std::vector<float> t(256);
    for (int i = 0; i < 256; ++i) t[size_t(i)] = f8e4m3_to_f32(uint8_t(i));
    return t;
  }();
  return lut.data();
}

// 8 fp8_e4m3 values as f32 times 2^-8. e4m3 bits (v & 0x7f) << 7 read as an f16 are the same
// number with exponent bias 15 instead of 7 (subnormals included), so one cvtph converts 8 values
// at a time and a multiply by 2^8 restores the scale; the sign bit moves to bit 15.
inline __m256 load8_fp8_div256(const uint8_t* p) {
  const __m128i mag = _mm_set1_epi16(0x7f), sign = _mm_set1_epi16(0x80);
  const __m128i v = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_cvtph_ps(_mm_or_si128(_mm_slli_epi16(_mm_and_si128(v, mag), 7), _mm_slli_epi16(_mm_and_si128(v, sign), 8)));
}

// n fp8_e4m3 values times `scale` as f32 (load8_fp8_div256, 8 at a time).
inline void fp8_to_f32_scaled(const uint8_t* src, float* dst, int64_t n, float scale) {
  const __m256 mul = _mm256_set1_ps(256.f * scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_mul_ps(load8_fp8_div256(src + i), mul));
  const float* lut = nullptr;
  for (; i < n; ++i) {
    if (!lut) lut = fp8_lut();
    dst[i] = lut[src[i]] * scale;
  }
}

// Widens n values of dtype t (f32/f16/bf16, or f8_e4m3 as fp8_to_f32_scaled decodes it) to f32.
inline void widen(DType t, const void* src, float* dst, int64_t n) {
  if (t == DType::F32) {
    std::memcpy(dst, src, size_t(n) * 4);
    return;
  }
  if (t == DType::F8E4M3) {
    fp8_to_f32_scaled(static_cast<const uint8_t*>(src), dst, n, 1.f);
    return;
  }
  const uint16_t* s = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  if (t == DType::BF16) {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8_bf16(s + i));
    for (; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
  } else {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8_f16(s + i));
    for (; i < n; ++i) dst[i] = f16_to_f32(s[i]);
  }
}

inline float dot_f32(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  float s = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace portllm::cpu
