// Error checks for vendor runtime and BLAS calls: a failing call throws portllm::Error naming the
// call and the vendor's error string.
#pragma once
#include "backends/gpu/vendor/vendor.h"
#include "core/error.h"

#define PL_GPU_CHECK(expr)                                                                  \
  do {                                                                                      \
    gpuError_t pl_gpu_err_ = (expr);                                                        \
    if (pl_gpu_err_ != gpuSuccess) PL_THROW("{}: {}", #expr, gpuGetErrorString(pl_gpu_err_)); \
  } while (0)

#define PL_GPUBLAS_CHECK(expr)                                                                      \
  do {                                                                                              \
    gpublasStatus_t pl_blas_st_ = (expr);                                                           \
    if (pl_blas_st_ != GPUBLAS_STATUS_SUCCESS) PL_THROW("{}: {}", #expr, gpublasGetStatusString(pl_blas_st_)); \
  } while (0)

// After a kernel launch: reports bad launch configurations at the op that caused them.
#define PL_GPU_LAUNCH_CHECK() PL_GPU_CHECK(gpuGetLastError())
