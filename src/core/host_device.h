// PL_HD marks a function compiled for the host and, in GPU builds (CUDA, or MUSA's compiler), for
// the device too: the few computations every backend must do bit for bit alike
// (core/fp8_e4m3.h's conversions, ops/sample_math.h's sampling keys).
#pragma once

#if defined(__CUDACC__) || defined(__MUSACC__)
#define PL_HD __host__ __device__
#else
#define PL_HD
#endif
