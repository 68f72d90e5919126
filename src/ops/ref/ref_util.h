// Element access for reference kernels: any float dtype in, double math, any float dtype out.
// Slow on purpose: obviously correct beats fast in the oracle.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace portllm::ref {

inline double load(DType t, const void* base, int64_t i) {
  switch (t) {
    case DType::F32: return static_cast<const float*>(base)[i];
    case DType::F64: return static_cast<const double*>(base)[i];
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::F8E4M3: return f8e4m3_to_f32(static_cast<const uint8_t*>(base)[i]);
    case DType::I32: return static_cast<const int32_t*>(base)[i];
    case DType::I64: return double(static_cast<const int64_t*>(base)[i]);
    default: return 0;
  }
}

inline void store(DType t, void* base, int64_t i, double v) {
  switch (t) {
    case DType::F32: static_cast<float*>(base)[i] = float(v); break;
    case DType::F64: static_cast<double*>(base)[i] = v; break;
    case DType::BF16: static_cast<uint16_t*>(base)[i] = f32_to_bf16(float(v)); break;
    case DType::F16: static_cast<uint16_t*>(base)[i] = f32_to_f16(float(v)); break;
    case DType::F8E4M3: static_cast<uint8_t*>(base)[i] = f32_to_f8e4m3(float(v)); break;
    case DType::I32: static_cast<int32_t*>(base)[i] = int32_t(v); break;
    default: break;
  }
}

// store() for a KV cache: an fp8 cache saturates at +-448 (f32_to_f8e4m3_satfinite).
inline void store_satfinite(DType t, void* base, int64_t i, double v) {
  if (t == DType::F8E4M3) static_cast<uint8_t*>(base)[i] = f32_to_f8e4m3_satfinite(float(v));
  else store(t, base, i, v);
}

// Element (i, j) of a 2-D view, (i, j, k) of a 3-D view, by strides.
inline double at(const Tensor& t, int64_t i, int64_t j) {
  return load(t.dtype, t.data, i * t.strides[0] + j * t.strides[1]);
}
inline double at(const Tensor& t, int64_t i, int64_t j, int64_t k) {
  return load(t.dtype, t.data, i * t.strides[0] + j * t.strides[1] + k * t.strides[2]);
}
inline void put(const Tensor& t, int64_t i, int64_t j, double v) {
  store(t.dtype, t.data, i * t.strides[0] + j * t.strides[1], v);
}
inline void put(const Tensor& t, int64_t i, int64_t j, int64_t k, double v) {
  store(t.dtype, t.data, i * t.strides[0] + j * t.strides[1] + k * t.strides[2], v);
}
inline int32_t idx(const Tensor& t, int64_t i) { return static_cast<const int32_t*>(t.data)[i * t.strides[0]]; }

}  // namespace portllm::ref
