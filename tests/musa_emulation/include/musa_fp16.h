// TEST-ONLY emulation (see musa_runtime.h): MUSA's half type keeps CUDA's names (__half,
// __half2float, __float2half_rn), so this is CUDA's header.
#pragma once
#include <cuda_fp16.h>
