// BATCHED_MATMUL through the vendor BLAS: out[b] = x[b] @ W[b]^T for every b in one strided-batched
// GEMM, where a loop of MATMULs would launch one tiny GEMV per batch (MLA decode: one per head
// and layer). The per-batch mapping is matmul.cpp's: row-major x/W/out are column-major
// x^T/W^T/out^T, so each GEMM is out^T = W^T' * x^T with m = N, n = M, k = K, leading dimensions
// the row strides and batch strides the views' dim-0 strides, f32 accumulation. Only matching
// float operands are taken (out in the activation dtype or f32): mixed ones (dequantized fp8 or
// f32 weights under bf16 activations) are declined, and the caller keeps its per-batch MATMULs,
// which widen them.
#include <algorithm>

#include "backends/gpu/gpu_check.h"
#include "backends/gpu/gpu_device.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/gpu_runtime.h"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
bool is_float(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

void batched_matmul(const BatchedMatmulArgs& a, Stream& s) {
  const int64_t B = a.w.size(0), M = a.x.size(1), N = a.w.size(1), K = a.w.size(2);
  PL_CHECK(a.x.ndim == 3 && a.out.ndim == 3 && a.x.size(0) == B && a.x.size(2) == K && a.out.size(0) == B &&
               a.out.size(1) == M && a.out.size(2) == N,
           "gpu batched matmul: x {} W {} out {}", a.x.shape_str(), a.w.shape_str(), a.out.shape_str());
  PL_CHECK(a.x.strides[2] == 1 && a.w.strides[2] == 1 && a.out.strides[2] == 1,
           "gpu batched matmul: last dims must be contiguous");
  if (B == 0 || M == 0 || N == 0) return;
  auto& gs = dynamic_cast<GpuStream&>(s);
  gpublasHandle_t h = gs.device().blas(gs.get());
  const float alpha = 1.f, beta = 0.f;
  // BLAS wants ld >= the column-major row count even when there is one column (M == 1).
  const int64_t ldw = std::max(a.w.strides[1], K), ldx = std::max(a.x.strides[1], K);
  const int64_t ldo = std::max(a.out.strides[1], N);
  PL_GPUBLAS_CHECK(gpublasGemmStridedBatchedEx(
      h, GPUBLAS_OP_T, GPUBLAS_OP_N, int(N), int(M), int(K), &alpha, a.w.data, blas_type(a.w.dtype), int(ldw),
      (long long)a.w.strides[0], a.x.data, blas_type(a.x.dtype), int(ldx), (long long)a.x.strides[0], &beta,
      a.out.data, blas_type(a.out.dtype), int(ldo), (long long)a.out.strides[0], int(B), GPUBLAS_COMPUTE_32F,
      GPUBLAS_GEMM_DEFAULT));
}

bool supports(const OpDesc& d, const DeviceCaps& c) {
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  if (!is_float(x) || w != x || (o != x && o != DType::F32)) return false;
  return x != DType::BF16 || c.bf16_blas;
}
}  // namespace

void register_batched_matmul_kernels() {
  register_kernel<BatchedMatmulArgs>(Op::BATCHED_MATMUL, kGpuKind, "gpu.batched_matmul_blas", 10, supports,
                                     batched_matmul);
}

}  // namespace portllm::gpu
