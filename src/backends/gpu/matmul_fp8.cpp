// MATMUL_FP8_BLOCK: out[M,N] = x[M,K] @ (W_fp8[N,K] * scale)^T (+ bias), f32 accumulation.
// Dequantizing paths, all portable (no fp8 units needed; caps.fp8 is not required):
//  * gpu.matmul_fp8_gemv (M < 32): the grouped GEMV of moe_gemv.cu as one group; W streams once
//    per 8 rows with 16-byte loads (decode sizes).
//  * gpu.matmul_fp8_tiled: the tiled GEMM of moe_gemm.cu as one group; W tiles are decoded and
//    scaled while loaded, so W is read once per row tile as 1-byte elements (GEMV / decode sizes).
//  * gpu.matmul_fp8_dequant_blas (M >= 32): W dequantized into scratch in the activation dtype,
//    then one gpublasGemmEx (prefill sizes, where the BLAS' matrix units win).
// The W8A8 path on fp8 units (caps.fp8) is matmul_fp8_w8a8.cpp (NVIDIA Hopper, cuBLASLt), above
// these by priority from 8 rows (PORTLLM_W8A8_MIN_ROWS).
#include <algorithm>

#include "backends/gpu/gpu_check.h"
#include "backends/gpu/gpu_device.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/gpu_runtime.h"
#include "backends/gpu/grouped_gemm.h"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;

constexpr int64_t kBlasMinRows = 32;

bool is_float(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

// The scale layout as (block_n, block_k, row stride, column stride); a per-tensor scale is one
// block covering W.
struct ScaleLayout {
  int bn, bk;
  int64_t s0, s1;
};

ScaleLayout scale_layout(const MatmulArgs& a, int64_t N, int64_t K) {
  PL_CHECK(a.w_scale.defined() && a.w_scale.dtype == DType::F32, "gpu fp8 matmul: W needs f32 scales");
  if (a.block_n > 0 && a.block_k > 0) {
    PL_CHECK(a.w_scale.ndim == 2 && a.w_scale.size(0) >= (N + a.block_n - 1) / a.block_n &&
                 a.w_scale.size(1) >= (K + a.block_k - 1) / a.block_k,
             "gpu fp8 matmul: scale {} does not cover W [{}, {}] in {}x{} blocks", a.w_scale.shape_str(), N, K,
             a.block_n, a.block_k);
    return {a.block_n, a.block_k, a.w_scale.strides[0], a.w_scale.strides[1]};
  }
  return {int(std::max<int64_t>(N, 1)), int(std::max<int64_t>(K, 1)), 0, 0};
}

void check_shapes(const MatmulArgs& a) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  PL_CHECK(a.x.size(1) == K && a.out.size(0) == M && a.out.size(1) == N, "gpu fp8 matmul: x {} W {} out {}",
           a.x.shape_str(), a.w.shape_str(), a.out.shape_str());
}

// The bias as f32 (converted in scratch when stored in another dtype).
const float* bias_f32(const MatmulArgs& a, Stream& s, std::shared_ptr<void>& keep) {
  if (!a.bias.defined()) return nullptr;
  if (a.bias.dtype == DType::F32) return a.bias.ptr<float>();
  const int64_t N = a.bias.numel();
  keep = scratch(s, size_t(N) * 4);
  launch_convert(keep.get(), DType::F32, a.bias.data, a.bias.dtype, 1, N, N, N, native_stream(s));
  return static_cast<const float*>(keep.get());
}

// The op as one group of the grouped GEMM / GEMV (bias converted to f32 into bias_keep).
GroupedGemmParams fp8_params(const MatmulArgs& a, Stream& s, std::shared_ptr<void>& bias_keep) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  const ScaleLayout sl = scale_layout(a, N, K);
  GroupedGemmParams p;
  p.out = a.out.data;
  p.out_t = a.out.dtype;
  p.out_ld = a.out.strides[0];
  p.x = a.x.data;
  p.x_t = a.x.dtype;
  p.x_ld = a.x.strides[0];
  p.w = a.w.data;
  p.w_t = DType::F8E4M3;
  p.w_ld = a.w.strides[0];
  p.scale = a.w_scale.ptr<float>();
  p.s_s0 = sl.s0;
  p.s_s1 = sl.s1;
  p.block_n = sl.bn;
  p.block_k = sl.bk;
  p.bias = bias_f32(a, s, bias_keep);
  p.rows = M;
  p.N = N;
  p.K = K;
  return p;
}

void matmul_fp8_tiled(const MatmulArgs& a, Stream& s) {
  check_shapes(a);
  if (a.x.size(0) == 0 || a.w.size(0) == 0) return;
  std::shared_ptr<void> bias_keep;
  launch_grouped_gemm(fp8_params(a, s, bias_keep), s);
}

void matmul_fp8_gemv(const MatmulArgs& a, Stream& s) {
  check_shapes(a);
  if (a.x.size(0) == 0 || a.w.size(0) == 0) return;
  std::shared_ptr<void> bias_keep;
  launch_grouped_gemv(fp8_params(a, s, bias_keep), s);
}

void matmul_fp8_dequant_blas(const MatmulArgs& a, Stream& s) {
  check_shapes(a);
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  if (M == 0 || N == 0) return;
  const ScaleLayout sl = scale_layout(a, N, K);
  const DType ct = a.x.dtype;  // W is dequantized to the activation dtype
  auto wd = scratch(s, size_t(N * std::max<int64_t>(K, 1)) * dtype_size(ct));
  launch_fp8_dequant(wd.get(), ct, K, a.w.data, a.w.strides[0], a.w_scale.ptr<float>(), sl.s0, sl.s1, sl.bn, sl.bk,
                     N, K, s);
  const bool has_bias = a.bias.defined();
  if (has_bias)
    launch_bias_fill(a.out.data, a.out.dtype, a.out.strides[0], a.bias.data, a.bias.dtype, M, N, native_stream(s));
  auto& gs = dynamic_cast<GpuStream&>(s);
  gpublasHandle_t h = gs.device().blas(gs.get());
  const float alpha = 1.f, beta = has_bias ? 1.f : 0.f;
  PL_GPUBLAS_CHECK(gpublasGemmEx(h, GPUBLAS_OP_T, GPUBLAS_OP_N, int(N), int(M), int(K), &alpha, wd.get(),
                                 blas_type(ct), int(std::max<int64_t>(K, 1)), a.x.data, blas_type(ct),
                                 int(a.x.strides[0]), &beta, a.out.data, blas_type(a.out.dtype),
                                 int(a.out.strides[0]), GPUBLAS_COMPUTE_32F, GPUBLAS_GEMM_DEFAULT));
}

// x f32/bf16/f16, W fp8, out = x's dtype or f32.
bool fp8_operands(const OpDesc& d) {
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  return is_float(x) && w == DType::F8E4M3 && (o == x || o == DType::F32);
}

bool tiled_supports(const OpDesc& d, const DeviceCaps&) {
  return fp8_operands(d) && d.dim[1] < (int64_t(1) << 31) && d.dim[2] < (int64_t(1) << 31);
}

// Below the BLAS path's rows: the GEMV reads W once per 8 rows (the repeats of neighbouring row
// tiles come from L2), which beats the tiled kernel's scalar loads at these sizes.
bool gemv_supports(const OpDesc& d, const DeviceCaps& c) {
  // N: the GEMV's grid has at most 65535 slices of >= 4 columns (fp8 slices on 128-wide warps).
  return tiled_supports(d, c) && d.dim[0] < kBlasMinRows && d.dim[1] <= 65535 * 4;
}

bool blas_supports(const OpDesc& d, const DeviceCaps& c) {
  if (!fp8_operands(d) || d.dim[0] < kBlasMinRows) return false;
  if (d.dtype[0] == DType::BF16 && !c.bf16_blas) return false;
  return d.dim[1] < (int64_t(1) << 31) && d.dim[2] < (int64_t(1) << 31);
}
}  // namespace

void register_matmul_fp8_kernels() {
  register_kernel<MatmulArgs>(Op::MATMUL_FP8_BLOCK, kKind, "gpu.matmul_fp8_dequant_blas", 20, blas_supports,
                              matmul_fp8_dequant_blas);
  register_kernel<MatmulArgs>(Op::MATMUL_FP8_BLOCK, kKind, "gpu.matmul_fp8_gemv", 25, gemv_supports, matmul_fp8_gemv);
  register_kernel<MatmulArgs>(Op::MATMUL_FP8_BLOCK, kKind, "gpu.matmul_fp8_tiled", 10, tiled_supports,
                              matmul_fp8_tiled);
}

}  // namespace portllm::gpu
