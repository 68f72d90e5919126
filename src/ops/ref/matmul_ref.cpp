// Reference: out = x @ W^T (+ bias), double accumulation. FP8 weights are dequantized with
// their block (or per-tensor) scale first, exactly as the checkpoint format defines.
// BATCHED_MATMUL is the same loop per batch.
#include "ops/op_args.h"
#include "ops/ref/ref_kernels.h"
#include "ops/ref/ref_util.h"
#include "ops/registry.h"

namespace portllm::ref {

namespace {
constexpr int P = KernelInfo::kReferencePriority;

double weight_at(const MatmulArgs& a, int64_t n, int64_t k) {
  double w = at(a.w, n, k);
  if (a.w.dtype == DType::F8E4M3) {
    if (a.block_n > 0 && a.block_k > 0)
      w *= at(a.w_scale, n / a.block_n, k / a.block_k);
    else
      w *= load(a.w_scale.dtype, a.w_scale.data, 0);
  }
  return w;
}

void matmul(const MatmulArgs& a, Stream&) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = a.bias.defined() ? load(a.bias.dtype, a.bias.data, n) : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += at(a.x, m, k) * weight_at(a, n, k);
      put(a.out, m, n, acc);
    }
}

// BATCHED_MATMUL: the plain matmul per batch, on that batch's 2-D slices of the 3-D views.
void batched_matmul(const BatchedMatmulArgs& a, Stream&) {
  const int64_t B = a.w.size(0), M = a.x.size(1), N = a.w.size(1), K = a.w.size(2);
  for (int64_t b = 0; b < B; ++b) {
    const Tensor x = a.x.select(0, b), w = a.w.select(0, b), out = a.out.select(0, b);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += at(x, m, k) * at(w, n, k);
        put(out, m, n, acc);
      }
  }
}
}  // namespace

void register_matmul_ref() {
  auto any = [](const OpDesc&, const DeviceCaps&) { return true; };
  register_kernel<MatmulArgs>(Op::MATMUL, DeviceKind::CPU, "ref.matmul", P, any, matmul);
  register_kernel<MatmulArgs>(Op::MATMUL_FP8_BLOCK, DeviceKind::CPU, "ref.matmul_fp8_block", P,
                              any, matmul);
  register_kernel<BatchedMatmulArgs>(Op::BATCHED_MATMUL, DeviceKind::CPU, "ref.batched_matmul", P, any,
                                     batched_matmul);
}

}  // namespace portllm::ref
