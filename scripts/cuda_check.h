// CK(call): the error check of the standalone CUDA probes in scripts/ (issue_rate_probe.cu,
// cp_async_probe.cu): prints the failing call with the runtime's message and exits 1.
#pragma once
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CK(x)                                                     \
  do {                                                            \
    const cudaError_t e_ = (x);                                   \
    if (e_ != cudaSuccess) {                                      \
      std::printf("FAILED %s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                               \
    }                                                             \
  } while (0)
