// cuBLASLt pieces shared by the GEMMs that call it directly (matmul_lt_tuned.cpp,
// matmul_fp8_w8a8.cpp): the process' handle, the alignment a pointer really has, and RAII for one
// call's descriptors. NVIDIA only: vendor/musa.h maps no BLASLt yet, so MUSA builds use the
// portable gpublasGemmEx siblings (ARCHITECTURE.md rule 4).
#pragma once
#if !defined(PORTLLM_GPU_MUSA)
#include <cstdint>
#include <string>

#include "backends/gpu/vendor/vendor.h"
#include "core/error.h"

// Descriptor setup failures are programming errors (a bad attribute or size): always thrown,
// naming the kernel, the problem and the call.
#define PL_LT_CHECK(who, expr, shape)                                                                   \
  do {                                                                                                  \
    gpublasStatus_t pl_lt_st_ = (expr);                                                                 \
    if (pl_lt_st_ != GPUBLAS_STATUS_SUCCESS)                                                            \
      PL_THROW("{} ({}): {}: {}", who, shape, #expr, gpublasGetStatusString(pl_lt_st_));               \
  } while (0)

namespace portllm::gpu {

// The process' cuBLASLt handle. Unlike a cuBLAS handle it is not tied to a device or context
// (cuBLAS docs, cublasLtHandle_t), so one serves every GpuDevice.
gpublasLtHandle_t lt_handle();

// Largest power of two (<= 256) dividing the address: the alignment cuBLASLt may assume.
uint32_t alignment_of(const void* p);

// The descriptors of a GEMM. The W8A8 GEMM builds them per call (its scale pointers change from
// call to call); the tuned GEMM keeps one set per problem (it sets no per-call attribute).
struct LtCall {
  gpublasLtMatmulDesc_t desc = nullptr;
  gpublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  gpublasLtMatmulPreference_t pref = nullptr;
  LtCall() = default;
  LtCall(const LtCall&) = delete;
  LtCall& operator=(const LtCall&) = delete;
  ~LtCall();
};

// Creates c.pref: at most max_workspace bytes of workspace, and the alignments the operands really
// have (the heuristic otherwise assumes 256 bytes). `who` and `shape` name a failure.
void lt_preference(LtCall& c, uint64_t max_workspace, uint32_t align_a, uint32_t align_b, uint32_t align_d,
                   const char* who, const std::string& shape);

// One matmul descriptor attribute, of the type cublasLt.h documents for it.
template <class T>
void lt_set_attr(gpublasLtMatmulDesc_t desc, gpublasLtMatmulDescAttributes_t attr, const T& v, const char* who,
                 const std::string& shape) {
  PL_LT_CHECK(who, gpublasLtMatmulDescSetAttribute(desc, attr, &v, sizeof(v)), shape);
}

}  // namespace portllm::gpu

#endif
