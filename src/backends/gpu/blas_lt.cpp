#include "backends/gpu/blas_lt.h"
#if !defined(PORTLLM_GPU_MUSA)
#include "backends/gpu/gpu_check.h"

namespace portllm::gpu {

gpublasLtHandle_t lt_handle() {
  // Never destroyed: the driver may be gone by the time static destructors run.
  static gpublasLtHandle_t h = [] {
    gpublasLtHandle_t r = nullptr;
    PL_GPUBLAS_CHECK(gpublasLtCreate(&r));
    return r;
  }();
  return h;
}

uint32_t alignment_of(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a >>= 1;
  return a;
}

LtCall::~LtCall() {
  if (pref) (void)gpublasLtMatmulPreferenceDestroy(pref);
  if (d) (void)gpublasLtMatrixLayoutDestroy(d);
  if (b) (void)gpublasLtMatrixLayoutDestroy(b);
  if (a) (void)gpublasLtMatrixLayoutDestroy(a);
  if (desc) (void)gpublasLtMatmulDescDestroy(desc);
}

void lt_preference(LtCall& c, uint64_t max_workspace, uint32_t align_a, uint32_t align_b, uint32_t align_d,
                   const char* who, const std::string& shape) {
  PL_LT_CHECK(who, gpublasLtMatmulPreferenceCreate(&c.pref), shape);
  auto set = [&](auto attr, const auto& v) {
    PL_LT_CHECK(who, gpublasLtMatmulPreferenceSetAttribute(c.pref, attr, &v, sizeof(v)), shape);
  };
  set(GPUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_workspace);
  set(GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a);
  set(GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b);
  set(GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d);
  set(GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d);
}

}  // namespace portllm::gpu
#endif
