// f8_e4m3 on the device: the conversions are core/fp8_e4m3.h's, compiled for host and device alike
// (f8e4m3_to_f32: the GEMM kernels dequantize weight tiles with it while loading them;
// f32_to_f8e4m3_satfinite: the fp8 KV cache's writes). Plain integer and float code, so it runs on
// any vendor without an fp8 header or fp8 units.
#pragma once
#include <cstdint>

#include "backends/gpu/vendor/vendor.h"
#include "core/fp8_e4m3.h"

namespace portllm::gpu {

// One e4m3 value in memory: the device type of DType::F8E4M3 caches (kernel_common.cuh's ld / cvt
// and vec_io.cuh's vectors take it like the 16-bit types).
struct gpu_fp8 {
  uint8_t bits;
};

}  // namespace portllm::gpu
