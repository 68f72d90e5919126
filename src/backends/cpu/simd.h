// Small AVX2 helpers shared by the CPU kernels: bf16/f16/fp8 values widened to f32, dot products.
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

// Rows of a stored dtype read as f32, 8 values at a time widened in registers: TypedRow<T>::load8(p,
// i) gives values i..i+7, at(p, i) value i. The CPU attention reads KV-cache rows in place this
// way; copying each row to f32 first cost a store and a reload per value (BENCHMARKS.md, eighteenth
// session: with an fp8 cache that made the paged attention slower than with an f32 one).
template <DType T>
struct TypedRow;

template <>
struct TypedRow<DType::F32> {
  static __m256 load8(const void* p, int64_t i) { return _mm256_loadu_ps(static_cast<const float*>(p) + i); }
  static float at(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
};
template <>
struct TypedRow<DType::BF16> {
  static __m256 load8(const void* p, int64_t i) { return load8_bf16(static_cast<const uint16_t*>(p) + i); }
  static float at(const void* p, int64_t i) { return bf16_to_f32(static_cast<const uint16_t*>(p)[i]); }
};
template <>
struct TypedRow<DType::F16> {
  static __m256 load8(const void* p, int64_t i) { return load8_f16(static_cast<const uint16_t*>(p) + i); }
  static float at(const void* p, int64_t i) { return f16_to_f32(static_cast<const uint16_t*>(p)[i]); }
};
template <>
struct TypedRow<DType::F8E4M3> {
  static __m256 load8(const void* p, int64_t i) {
    return _mm256_mul_ps(load8_fp8_div256(static_cast<const uint8_t*>(p) + i), _mm256_set1_ps(256.f));
  }
  static float at(const void* p, int64_t i) { return f8e4m3_to_f32(static_cast<const uint8_t*>(p)[i]); }
};

// sum_i q[i] * row[i]: two 8-wide accumulators, then the tail.
template <DType T>
float dot_row(const float* q, const void* row, int64_t n) {
  using R = TypedRow<T>;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), R::load8(row, i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), R::load8(row, i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), R::load8(row, i), acc0);
  float s = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += q[i] * R::at(row, i);
  return s;
}

// acc[i] += e * row[i].
template <DType T>
void axpy_row(float e, const void* row, float* acc, int64_t n) {
  using R = TypedRow<T>;
  const __m256 ev = _mm256_set1_ps(e);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(ev, R::load8(row, i), _mm256_loadu_ps(acc + i)));
  for (; i < n; ++i) acc[i] += e * R::at(row, i);
}

// dst[i] = row[i] as f32.
template <DType T>
void widen_row(const void* row, float* dst, int64_t n) {
  using R = TypedRow<T>;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, R::load8(row, i));
  for (; i < n; ++i) dst[i] = R::at(row, i);
}

// Widens n values of dtype t (f32/bf16/f16/f8_e4m3) to f32.
inline void widen(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case DType::BF16: return widen_row<DType::BF16>(src, dst, n);
    case DType::F16: return widen_row<DType::F16>(src, dst, n);
    default: return widen_row<DType::F8E4M3>(src, dst, n);  // the kernels' supports() admit no other
  }
}

inline float dot_f32(const float* a, const float* b, int64_t n) { return dot_row<DType::F32>(a, b, n); }

}  // namespace portllm::cpu
