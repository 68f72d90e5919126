// The vendor's packed e4m3 -> f16 conversion, for kernels that decode fp8 weights (moe_gemv_common.cuh).
// Its own header (not cuda.h / musa.h) so that only those kernels depend on it.
//   gpu_e4m3x4_to_f16x4(w, lo, hi): four e4m3 bytes (byte i = value i) as four f16 values, two per
//   word (values 0, 1 in lo), exactly: every e4m3 value, subnormals included, is an f16 value, and
//   NaN stays NaN. Returns false where the device code has no such instruction (NVIDIA before
//   sm_89, MUSA); the caller then decodes with integer ops. A compile-time constant per target.
#pragma once
#include <cstdint>

#include "backends/gpu/vendor/vendor.h"

#if defined(__CUDACC__) || defined(__MUSACC__)
#if !defined(PORTLLM_GPU_MUSA)
#include <cuda_fp8.h>
#endif

namespace portllm::gpu {

__device__ __forceinline__ bool gpu_e4m3x4_to_f16x4(uint32_t w, uint32_t& lo, uint32_t& hi) {
#if !defined(PORTLLM_GPU_MUSA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  const __half2_raw a = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(w & 0xffffu), __NV_E4M3);
  const __half2_raw b = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(w >> 16), __NV_E4M3);
  lo = uint32_t(a.x) | (uint32_t(a.y) << 16);
  hi = uint32_t(b.x) | (uint32_t(b.y) << 16);
  return true;
#else
  (void)w;
  lo = hi = 0;
  return false;
#endif
}

}  // namespace portllm::gpu
#endif
