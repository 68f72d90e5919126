// The bit placement that widens e4m3 to f16 on GPUs without an e4m3 conversion (sm_80:
// backends/gpu/fp8_f16_bits.h, used by the tensor-core attention kernels for fp8 KV caches): every
// pair of bytes, in every position of the word, gives f16 values of exactly 2^-8 times the e4m3
// values of core/dtype.h (the kernel then multiplies by 2^8, exact in f16). The H200 takes the
// hardware conversion instead, so this is where the fallback is checked.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/gpu/fp8_f16_bits.h"
#include "core/dtype.h"

using namespace portllm;

namespace {
float f16_half(uint32_t word, int half) { return f16_to_f32(uint16_t(half ? word >> 16 : word & 0xffffu)); }
}  // namespace

TEST(Fp8F16Bits, EveryByteInEveryPositionIsExact) {
  for (uint32_t a = 0; a < 256; ++a)
    for (uint32_t b = 0; b < 256; ++b) {
      // a and b in bytes 0 and 3, b and a in bytes 1 and 2: each byte value in every position.
      const uint32_t w = a | (b << 8) | (b << 16) | (a << 24);
      uint32_t lo = 0, hi = 0;
      gpu::fp8x4_to_f16x4_div256(w, lo, hi);
      const float got[4] = {f16_half(lo, 0), f16_half(lo, 1), f16_half(hi, 0), f16_half(hi, 1)};
      const uint32_t bytes[4] = {a, b, b, a};
      for (int i = 0; i < 4; ++i) {
        const float want = f8e4m3_to_f32(uint8_t(bytes[i]));
        if (std::isnan(want)) {  // the NaN byte, which cache writes never store: +-480 / 256
          ASSERT_EQ(got[i], (bytes[i] & 0x80u) ? -480.f / 256.f : 480.f / 256.f) << bytes[i];
          continue;
        }
        ASSERT_EQ(got[i] * 256.f, want) << "byte " << bytes[i] << " at position " << i;
        ASSERT_EQ(std::signbit(got[i]), std::signbit(want)) << "byte " << bytes[i];  // -0 stays -0
      }
    }
}
