// KV-cache rows read in their stored dtype (f32/bf16/f16/f8_e4m3) by the CPU attention: a dot
// product with a query and an accumulation into an output, 8 values at a time widened in
// registers. Copying each row to f32 first (widen) cost a store and a reload per value: with an
// fp8 cache that made the paged attention slower than with an f32 one.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/simd.h"
#include "core/dtype.h"

namespace portllm::cpu {

template <DType T>
struct CacheRow;  // load8(p, i): values i..i+7 as f32; at(p, i): value i

template <>
struct CacheRow<DType::F32> {
  static __m256 load8(const void* p, int64_t i) { return _mm256_loadu_ps(static_cast<const float*>(p) + i); }
  static float at(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
};
template <>
struct CacheRow<DType::BF16> {
  static __m256 load8(const void* p, int64_t i) { return load8_bf16(static_cast<const uint16_t*>(p) + i); }
  static float at(const void* p, int64_t i) { return bf16_to_f32(static_cast<const uint16_t*>(p)[i]); }
};
template <>
struct CacheRow<DType::F16> {
  static __m256 load8(const void* p, int64_t i) { return load8_f16(static_cast<const uint16_t*>(p) + i); }
  static float at(const void* p, int64_t i) { return f16_to_f32(static_cast<const uint16_t*>(p)[i]); }
};
template <>
struct CacheRow<DType::F8E4M3> {
  static __m256 load8(const void* p, int64_t i) {
    return _mm256_mul_ps(load8_fp8_div256(static_cast<const uint8_t*>(p) + i), _mm256_set1_ps(256.f));
  }
  static float at(const void* p, int64_t i) { return f8e4m3_to_f32(static_cast<const uint8_t*>(p)[i]); }
};

// sum_i q[i] * row[i], in dot_f32's order (two 8-wide accumulators, then the tail).
template <DType T>
float dot_row(const float* q, const void* row, int64_t n) {
  using R = CacheRow<T>;
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
  using R = CacheRow<T>;
  const __m256 ev = _mm256_set1_ps(e);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(ev, R::load8(row, i), _mm256_loadu_ps(acc + i)));
  for (; i < n; ++i) acc[i] += e * R::at(row, i);
}

}  // namespace portllm::cpu
