// Element types and their exact conversions. f16/bf16 round to nearest even; f8_e4m3fn follows
// PyTorch's c10::Float8_e4m3fn (OCP FP8: no infinities and no saturation: |x| > 464, Inf and NaN
// become NaN).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/fp8_e4m3.h"

namespace portllm {

enum class DType : uint8_t { F32, F16, BF16, F8E4M3, F64, I32, I64, U8, I8, BOOL };

size_t dtype_size(DType t);
const char* dtype_name(DType t);                               // "f32", "bf16", ...
std::optional<DType> dtype_from_name(std::string_view name);   // inverse of dtype_name
// Safetensors header names: "F32", "F16", "BF16", "F8_E4M3", "F64", "I32", "I64", "U8", "I8", "BOOL".
std::optional<DType> dtype_from_safetensors(std::string_view name);
bool dtype_is_float(DType t);

inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float f32_from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN, keep sign
  u += 0x7fffu + ((u >> 16) & 1u);                                       // round to nearest even
  return uint16_t(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
// f8e4m3_to_f32, f32_to_f8e4m3 and the saturating f32_to_f8e4m3_satfinite: core/fp8_e4m3.h.

// Converts n elements of type `from` at src to float32 at dst (and back).
void convert_to_f32(DType from, const void* src, float* dst, size_t n);
void convert_from_f32(DType to, const float* src, void* dst, size_t n);
// convert_from_f32 with fp8 through f32_to_f8e4m3_satfinite (the KV cache's writes).
void convert_from_f32_satfinite(DType to, const float* src, void* dst, size_t n);

}  // namespace portllm
