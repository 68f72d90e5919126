// The one header through which the GPU tree reaches its vendor's runtime, BLAS and graph APIs.
// Everything else in src/backends/gpu (kernels included) uses only the neutral gpu* / gpublas*
// names defined by the vendor file below, so the same sources build for CUDA and for MUSA
// (ARCHITECTURE.md, rule 1). A CI grep rejects cuda*/cublas*/nccl* calls outside this folder.
#pragma once

#if defined(PORTLLM_GPU_MUSA)
#include "backends/gpu/vendor/musa.h"
#else
#include "backends/gpu/vendor/cuda.h"
#endif

namespace portllm::gpu {
// Kernels are written for this warp size; GpuDevice checks that the device reports the same
// (ARCHITECTURE.md rule 5: MUSA MP21/MP22 report 128, and musa.h sets it accordingly).
constexpr int kWarpSize = PORTLLM_GPU_WARP_SIZE;
}  // namespace portllm::gpu
