// e4m3 to f16 by placing bits: four e4m3 values become four f16 equal to 2^-8 times them, exactly,
// with integer operations only. The tensor-core attention kernels widen fp8 KV tiles with it where
// the hardware has no e4m3 conversion (sm_80; mma_sm80.cuh's widen_fp8x4_f16 multiplies by 2^8 after
// it), and tests/core checks it on the host against core/fp8_e4m3.h for every byte.
#pragma once
#include <cstdint>

#include "core/host_device.h"

namespace portllm::gpu {

// Values 0, 1 (bytes 0, 1 of w) in lo, values 2, 3 in hi, lower value in the lower half. Each
// 16-bit lane is sign << 15 | (exponent, mantissa) << 7: e4m3's 4-bit exponent lands in the low
// bits of f16's 5-bit one and its 3 mantissa bits at the top of f16's 10, which is the value times
// 2^(7 - 15). e4m3 subnormals become f16 subnormals of the same scale and zero stays zero; the NaN
// byte (0x7f / 0xff, never written to a cache: writes saturate) reads as +-480 / 256.
PL_HD inline void fp8x4_to_f16x4_div256(uint32_t w, uint32_t& lo, uint32_t& hi) {
  lo = ((w & 0x80u) << 8) | ((w & 0x7fu) << 7) | ((w & 0x8000u) << 16) | ((w & 0x7f00u) << 15);
  hi = ((w & 0x800000u) >> 8) | ((w & 0x7f0000u) >> 9) | (w & 0x80000000u) | ((w & 0x7f000000u) >> 1);
}

}  // namespace portllm::gpu
