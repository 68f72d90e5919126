// TEST-ONLY emulation of muBLAS over cuBLAS (see musa_runtime.h). muBLAS passes the GEMM compute
// type as a musaDataType_t (MUSA_R_32F), cuBLAS as a cublasComputeType_t: mublasGemmEx translates
// it, so the MUSA spelling in vendor/musa.h is what gets compiled.
#pragma once
#include <cublas_v2.h>

#include "musa_runtime.h"

using mublasHandle_t = cublasHandle_t;
using mublasStatus_t = cublasStatus_t;
using mublasOperation_t = cublasOperation_t;
using mublasGemmAlgo_t = cublasGemmAlgo_t;

#define MUBLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define MUBLAS_OP_N CUBLAS_OP_N
#define MUBLAS_OP_T CUBLAS_OP_T
#define MUBLAS_GEMM_DEFAULT CUBLAS_GEMM_DEFAULT
#define mublasCreate cublasCreate
#define mublasDestroy cublasDestroy
#define mublasSetStream cublasSetStream
#define mublasStatus_to_string cublasGetStatusString

inline mublasStatus_t mublasGemmEx(mublasHandle_t h, mublasOperation_t ta, mublasOperation_t tb, int m, int n, int k,
                                   const void* alpha, const void* A, musaDataType_t at, int lda, const void* B,
                                   musaDataType_t bt, int ldb, const void* beta, void* C, musaDataType_t ct, int ldc,
                                   musaDataType_t compute, mublasGemmAlgo_t algo) {
  // Only f32 accumulation is mapped: the tree asks for nothing else (vendor/musa.h).
  if (compute != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  return cublasGemmEx(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, CUBLAS_COMPUTE_32F, algo);
}

inline mublasStatus_t mublasGemmStridedBatchedEx(mublasHandle_t h, mublasOperation_t ta, mublasOperation_t tb, int m,
                                                 int n, int k, const void* alpha, const void* A, musaDataType_t at,
                                                 int lda, long long sa, const void* B, musaDataType_t bt, int ldb,
                                                 long long sb, const void* beta, void* C, musaDataType_t ct, int ldc,
                                                 long long sc, int batch, musaDataType_t compute,
                                                 mublasGemmAlgo_t algo) {
  if (compute != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;  // as mublasGemmEx above
  return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc,
                                    batch, CUBLAS_COMPUTE_32F, algo);
}
