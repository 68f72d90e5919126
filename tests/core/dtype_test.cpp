// Exactness of the dtype conversions: every 16-bit and 8-bit pattern round-trips; rounding is
// to nearest even at the exact midpoints; overflow/NaN/saturation follow IEEE for f16/bf16 and
// PyTorch's float8_e4m3fn (no infinities, no saturation: |x| > 464 -> NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/dtype.h"

using namespace portllm;

TEST(DType, Bf16RoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = bf16_to_f32(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f))));
      continue;
    }
    ASSERT_EQ(f32_to_bf16(f), h) << h;
  }
}

TEST(DType, F16RoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), h) << h;
  }
}

TEST(DType, F8RoundTripsEveryPattern) {
  for (uint32_t v = 0; v < 256; ++v) {
    float f = f8e4m3_to_f32(uint8_t(v));
    if (std::isnan(f)) {
      EXPECT_EQ(v & 0x7f, 0x7fu);  // the only NaN encodings
      continue;
    }
    ASSERT_EQ(f32_to_f8e4m3(f), v) << v;
  }
}

TEST(DType, KnownValues) {
  EXPECT_EQ(f8e4m3_to_f32(0x7e), 448.f);                   // max finite
  EXPECT_EQ(f8e4m3_to_f32(0x01), std::ldexp(1.f, -9));     // min subnormal
  EXPECT_EQ(f8e4m3_to_f32(0x08), std::ldexp(1.f, -6));     // min normal
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.f, -24));
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.f);
  EXPECT_EQ(f32_to_bf16(-2.f), 0xc000);
}

// Midpoints between two neighbours must round to the one with an even mantissa.
TEST(DType, RoundToNearestEvenAtMidpoints) {
  for (uint32_t h = 0x0001; h < 0x7f00; h += 37) {  // bf16 finite positives
    const float lo = bf16_to_f32(uint16_t(h)), hi = bf16_to_f32(uint16_t(h + 1));
    const float mid = f32_from_bits((f32_bits(lo) + f32_bits(hi)) / 2);  // exact midpoint in f32
    const uint16_t even = (h % 2 == 0) ? uint16_t(h) : uint16_t(h + 1);
    ASSERT_EQ(f32_to_bf16(mid), even) << h;
    ASSERT_EQ(f32_to_bf16(-mid), uint16_t(even | 0x8000)) << h;
  }
  for (uint32_t h = 0x0001; h < 0x7bff; h += 29) {  // f16 finite positives incl. subnormals
    const double lo = f16_to_f32(uint16_t(h)), hi = f16_to_f32(uint16_t(h + 1));
    const float mid = float((lo + hi) / 2);  // exact in f32 (f16 has 11 significant bits)
    const uint16_t even = (h % 2 == 0) ? uint16_t(h) : uint16_t(h + 1);
    ASSERT_EQ(f32_to_f16(mid), even) << h;
  }
  for (uint32_t v = 0x01; v < 0x7e; ++v) {  // f8 finite positives incl. subnormals
    const double lo = f8e4m3_to_f32(uint8_t(v)), hi = f8e4m3_to_f32(uint8_t(v + 1));
    const float mid = float((lo + hi) / 2);
    const uint8_t even = (v % 2 == 0) ? uint8_t(v) : uint8_t(v + 1);
    ASSERT_EQ(f32_to_f8e4m3(mid), even) << v;
    ASSERT_EQ(f32_to_f8e4m3(std::nextafter(mid, 0.f)), uint8_t(v)) << v;
  }
}

TEST(DType, OverflowNaNAndSaturation) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(f32_to_f16(65519.f), 0x7bff);   // below the midpoint to 65536: max finite
  EXPECT_EQ(f32_to_f16(65520.f), 0x7c00);   // the midpoint rounds to even = infinity
  EXPECT_EQ(f32_to_f16(-inf), 0xfc00);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(nan))));
  EXPECT_EQ(f32_to_bf16(inf), 0x7f80);
  EXPECT_EQ(f32_to_bf16(3.4e38f), 0x7f80);  // rounds past the max bf16 to infinity
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(nan))));
  // float8_e4m3fn has no infinity and does not saturate: 464 is the midpoint between 448 (0x7e)
  // and the NaN pattern 0x7f, so RNE keeps 464 at 448 and anything above it becomes NaN.
  EXPECT_EQ(f32_to_f8e4m3(460.f), 0x7e);
  EXPECT_EQ(f32_to_f8e4m3(464.f), 0x7e);
  EXPECT_EQ(f32_to_f8e4m3(465.f), 0x7f);
  EXPECT_EQ(f32_to_f8e4m3(479.f), 0x7f);
  EXPECT_EQ(f32_to_f8e4m3(480.f), 0x7f);
  EXPECT_EQ(f32_to_f8e4m3(-1000.f), 0xff);
  EXPECT_EQ(f32_to_f8e4m3(inf), 0x7f);
  EXPECT_EQ(f32_to_f8e4m3(nan), 0x7f);
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.f, -11)), 0x00);  // a quarter of the min subnormal
  EXPECT_EQ(f32_to_f8e4m3(-0.f), 0x80);
}

TEST(DType, Fp8SaturatingCast) {
  // The KV cache's cast: beyond +-448 it clips instead of making NaN; in range it is the plain cast.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(f32_to_f8e4m3_satfinite(465.f), 0x7e);
  EXPECT_EQ(f32_to_f8e4m3_satfinite(1e6f), 0x7e);
  EXPECT_EQ(f32_to_f8e4m3_satfinite(inf), 0x7e);
  EXPECT_EQ(f32_to_f8e4m3_satfinite(-1000.f), 0xfe);
  EXPECT_EQ(f32_to_f8e4m3_satfinite(-inf), 0xfe);
  EXPECT_TRUE(std::isnan(f8e4m3_to_f32(f32_to_f8e4m3_satfinite(nan))));
  for (float f : {0.f, -0.f, 0.3f, -1.7f, 100.f, 447.f, 448.f, -448.f, std::ldexp(1.f, -9)})
    EXPECT_EQ(f32_to_f8e4m3_satfinite(f), f32_to_f8e4m3(f)) << f;
  const float src[4] = {1.f, 500.f, -500.f, 2.f};
  uint8_t fp8[4];
  convert_from_f32_satfinite(DType::F8E4M3, src, fp8, 4);
  EXPECT_EQ(fp8[0], f32_to_f8e4m3(1.f));
  EXPECT_EQ(fp8[1], 0x7e);
  EXPECT_EQ(fp8[2], 0xfe);
  uint16_t bf[2];
  convert_from_f32_satfinite(DType::BF16, src, bf, 2);  // other dtypes: convert_from_f32
  EXPECT_EQ(bf[1], f32_to_bf16(500.f));
}

TEST(DType, Names) {
  EXPECT_EQ(dtype_from_safetensors("F8_E4M3"), DType::F8E4M3);
  EXPECT_EQ(dtype_from_name("bfloat16"), DType::BF16);
  EXPECT_FALSE(dtype_from_safetensors("F4").has_value());
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
}
