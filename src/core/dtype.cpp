#include "core/dtype.h"

#include <cmath>

#include "core/error.h"

namespace portllm {

namespace {
struct DTypeInfo {
  DType t;
  const char* name;
  const char* st_name;
  size_t size;
  bool is_float;
};
constexpr DTypeInfo kInfo[] = {
    {DType::F32, "f32", "F32", 4, true},      {DType::F16, "f16", "F16", 2, true},
    {DType::BF16, "bf16", "BF16", 2, true},   {DType::F8E4M3, "f8_e4m3", "F8_E4M3", 1, true},
    {DType::F64, "f64", "F64", 8, true},      {DType::I32, "i32", "I32", 4, false},
    {DType::I64, "i64", "I64", 8, false},     {DType::U8, "u8", "U8", 1, false},
    {DType::I8, "i8", "I8", 1, false},        {DType::BOOL, "bool", "BOOL", 1, false},
};
const DTypeInfo& info(DType t) { return kInfo[static_cast<int>(t)]; }
}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
const char* dtype_name(DType t) { return info(t).name; }
bool dtype_is_float(DType t) { return info(t).is_float; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (name == i.name) return i.t;
  if (name == "float32" || name == "float") return DType::F32;
  if (name == "float16" || name == "half") return DType::F16;
  if (name == "bfloat16") return DType::BF16;
  return std::nullopt;
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (const auto& i : kInfo)
    if (name == i.st_name) return i.t;
  return std::nullopt;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    // Zero or subnormal: value = mant * 2^-24, exact in float32.
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return sign | 0x7e00u | uint16_t((u >> 13) & 0x3ffu);  // NaN stays NaN
  if (u >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (u < 0x38800000u) {
    // Result is subnormal or zero: add a magic number so the FPU does the round-to-nearest-even
    // of the shifted-out bits (valid because the sum stays in one binade).
    float r = f32_from_bits(u) + 0.5f;  // 0.5 = 2^-1: ulp at this binade is 2^-24
    return sign | uint16_t(f32_bits(r) - f32_bits(0.5f));
  }
  const uint32_t mant_odd = (u >> 13) & 1u;
  u += (uint32_t(15 - 127) << 23) + 0xfffu + mant_odd;
  return sign | uint16_t(u >> 13);
}

void convert_to_f32(DType from, const void* src, float* dst, size_t n) {
  switch (from) {
    case DType::F32: std::memcpy(dst, src, n * 4); return;
    case DType::BF16: {
      auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::F16: {
      auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::F8E4M3: {
      auto* s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f8e4m3_to_f32(s[i]);
      return;
    }
    case DType::F64: {
      auto* s = static_cast<const double*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = float(s[i]);
      return;
    }
    case DType::I32: {
      auto* s = static_cast<const int32_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = float(s[i]);
      return;
    }
    case DType::I64: {
      auto* s = static_cast<const int64_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = float(s[i]);
      return;
    }
    default: PL_THROW("convert_to_f32: unsupported dtype {}", dtype_name(from));
  }
}

void convert_from_f32(DType to, const float* src, void* dst, size_t n) {
  switch (to) {
    case DType::F32: std::memcpy(dst, src, n * 4); return;
    case DType::BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::F16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::F8E4M3: {
      auto* d = static_cast<uint8_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_f8e4m3(src[i]);
      return;
    }
    default: PL_THROW("convert_from_f32: unsupported dtype {}", dtype_name(to));
  }
}

void convert_from_f32_satfinite(DType to, const float* src, void* dst, size_t n) {
  if (to != DType::F8E4M3) return convert_from_f32(to, src, dst, n);
  auto* d = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = f32_to_f8e4m3_satfinite(src[i]);
}

}  // namespace portllm
