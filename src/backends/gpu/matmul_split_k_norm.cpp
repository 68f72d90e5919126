// MATMUL_ADD_RMS_NORM at decode batch sizes: the projection as a split-K GEMM whose partial sums
// the residual add + RMSNorm kernel adds up (split_k_norm.cu), instead of MATMUL + ADD_RMS_NORM.
//
// Why: a sub-layer's last projection (o_proj, down_proj) is narrow (Qwen3-8B: N = 4096 outputs
// over K = 4096 / 12288) and at 16-256 rows has too few output tiles for 132 SMs; the vendor BLAS
// then runs some SMs idle or splits K itself and adds the slices in a reduction launch of its own.
// Split here into S slices of K as one strided-batched GEMM (batch s = the s-th K/S columns of x
// and W, writing f32 partials [S, M, N]), every SM has a share, and the norm that follows reads
// the S partials where it would read the projection's output: no reduction launch, the f32 sum
// rounded once. scripts/gemm_probe.cu (GEMM_PROBE_MODE=split, H200 at the boost clock, weights
// from memory) put S = 2 ahead of cublasGemmEx's default at every such size, e.g. o_proj at 160
// rows 19.4 -> 13.3 us, down at 192 rows 53.7 -> 33.3 us, and S >= 6 behind S = 2-4.
//
// NVIDIA only, as the measurement was (ARCHITECTURE.md rule 4: other vendors keep MATMUL +
// ADD_RMS_NORM); M = 1 is the GEMV's (gemv.cu), larger M prefill's compute-bound GEMM.
// PORTLLM_SPLIT_K_NORM (read once): the number of slices, 2-4 (default 2); 0 turns the kernel off,
// for measuring.
#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_check.h"
#include "backends/gpu/gpu_device.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/gpu_runtime.h"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr int kDefaultSplits = 2;
// Every decode batch the GEMV does not take (M = 1) up to the default graph sizes' end: the
// throughput workload gained most with all of them (BENCHMARKS.md, thirty-sixth session, out tok/s:
// 11,383-11,396 from 2 rows, 11,360-11,373 from 16, 11,306-11,316 from 128, 11,216-11,249 without).
constexpr int64_t kMinRows = 2, kMaxRows = 256;
// A slice of K keeps at least this many columns (Qwen3-8B's o_proj at S = 2, the smallest measured).
constexpr int64_t kMinSliceK = 2048;

int splits() {
  static const int s = env_int("PORTLLM_SPLIT_K_NORM", kDefaultSplits);
  return s;
}

void matmul_split_k_norm(const MatmulAddRmsNormArgs& a, Stream& s) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  PL_CHECK(a.x.size(1) == K && a.residual.size(0) == M && a.residual.size(1) == N && a.h.size(0) == M &&
               a.h.size(1) == N,
           "gpu MATMUL_ADD_RMS_NORM: x {} W {} residual {} h {}", a.x.shape_str(), a.w.shape_str(),
           a.residual.shape_str(), a.h.shape_str());
  if (M == 0) return;
  const int S = splits();
  const int64_t ks = K / S;
  auto partials = scratch(s, size_t(S * M * N) * sizeof(float));
  auto& gs = dynamic_cast<GpuStream&>(s);
  gpublasHandle_t h = gs.device().blas(gs.get());
  const float alpha = 1.f, beta = 0.f;
  // Column-major, as matmul.cpp: partial_s^T [N, M] = W_s^T' x_s^T, with W_s and x_s the s-th
  // K/S columns of W and x (batch stride K/S elements inside each row).
  PL_GPUBLAS_CHECK(gpublasGemmStridedBatchedEx(
      h, GPUBLAS_OP_T, GPUBLAS_OP_N, int(N), int(M), int(ks), &alpha, a.w.data, blas_type(a.w.dtype),
      int(a.w.strides[0]), (long long)ks, a.x.data, blas_type(a.x.dtype), int(a.x.strides[0]), (long long)ks, &beta,
      partials.get(), GPU_R_32F, int(N), (long long)(M * N), S, GPUBLAS_COMPUTE_32F, GPUBLAS_GEMM_DEFAULT));
  launch_split_k_add_rms_norm(a, static_cast<const float*>(partials.get()), S, s);
}

bool supports(const OpDesc& d, const DeviceCaps& c) {
  const int S = splits();
  const DType act = d.dtype[0];
  const int64_t M = d.dim[0], N = d.dim[1], K = d.dim[2];
  return c.vendor == "nvidia" && S >= 2 && S <= kSplitKNormMaxSplits &&
         (act == DType::BF16 || act == DType::F16) && d.dtype[1] == act && d.dtype[2] == act &&
         d.dtype[3] == act && M >= kMinRows && M <= kMaxRows && N % 8 == 0 && N <= kSplitKNormMaxWidth &&
         K % (8 * S) == 0 && K / S >= kMinSliceK;
}

void run(const MatmulAddRmsNormArgs& a, Stream& s) {
  // The BLAS takes x and W at any alignment; the norm kernel checks its own views (vec_view).
  if (a.x.dtype != a.w.dtype || (a.bias.defined() && a.bias.dtype != a.w.dtype))
    fail("MATMUL_ADD_RMS_NORM split-K: x, W and the bias share the activation dtype");
  matmul_split_k_norm(a, s);
}
}  // namespace

void register_matmul_split_k_norm_kernels() {
  register_kernel<MatmulAddRmsNormArgs>(Op::MATMUL_ADD_RMS_NORM, kGpuKind, "gpu.matmul_split_k_add_rms_norm", 15,
                                        supports, run);
}

}  // namespace portllm::gpu
