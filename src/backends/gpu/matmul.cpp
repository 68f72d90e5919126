// MATMUL through the vendor BLAS: out[M,N] = x[M,K] @ W[N,K]^T (+ bias), f32 accumulation.
// Row-major x/W/out are column-major x^T/W^T/out^T, so the BLAS call is out^T = W^T' * x^T with
// W transposed: m = N, n = M, k = K, and each leading dimension is the row stride of its tensor.
// Matching float operands (bf16/f16/f32) go straight to gpublasGemmEx (bf16/f16 inputs may write
// bf16/f16 or f32 outputs: the logits path). Mixed operands (an f32 checkpoint under bf16
// activations, or the conformance sweep's f32 activations with bf16 weights) are widened to f32
// in scratch memory first: correct, not fast. A bias is broadcast into the output and the GEMM
// adds onto it (beta = 1), so the output is rounded once.
#include "backends/gpu/gpu_check.h"
#include "backends/gpu/gpu_device.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/gpu_runtime.h"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::gpu {

gpuDataType_t blas_type(DType t) {
  switch (t) {
    case DType::F32: return GPU_R_32F;
    case DType::BF16: return GPU_R_16BF;
    case DType::F16: return GPU_R_16F;
    default: PL_THROW("gpu BLAS: unsupported dtype {}", dtype_name(t));
  }
}

namespace {
constexpr auto kKind = kGpuKind;

bool is_float(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

// A strided 2-D operand, possibly a widened scratch copy.
struct Operand {
  const void* data;
  DType dtype;
  int64_t ld;
  std::shared_ptr<void> keep;
};

Operand as_f32(const Tensor& t, Stream& s) {
  if (t.dtype == DType::F32) return {t.data, t.dtype, t.strides[0], nullptr};
  const int64_t R = t.size(0), C = t.size(1);
  auto mem = scratch(s, size_t(R * C) * 4);
  launch_convert(mem.get(), DType::F32, t.data, t.dtype, R, C, C, t.strides[0], native_stream(s));
  return {mem.get(), DType::F32, C, mem};
}

void gemm(Stream& s, const Operand& w, const Operand& x, void* out, DType out_t, int64_t out_ld, int64_t M,
          int64_t N, int64_t K, float beta) {
  auto& gs = dynamic_cast<GpuStream&>(s);
  gpublasHandle_t h = gs.device().blas(gs.get());
  const float alpha = 1.f;
  PL_GPUBLAS_CHECK(gpublasGemmEx(h, GPUBLAS_OP_T, GPUBLAS_OP_N, int(N), int(M), int(K), &alpha, w.data,
                                 blas_type(w.dtype), int(w.ld), x.data, blas_type(x.dtype), int(x.ld), &beta, out,
                                 blas_type(out_t), int(out_ld), GPUBLAS_COMPUTE_32F, GPUBLAS_GEMM_DEFAULT));
}

void matmul(const MatmulArgs& a, Stream& s) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  PL_CHECK(a.x.size(1) == K && a.out.size(0) == M && a.out.size(1) == N, "gpu matmul: x {} W {} out {}",
           a.x.shape_str(), a.w.shape_str(), a.out.shape_str());
  if (M == 0 || N == 0) return;
  const bool direct = a.x.dtype == a.w.dtype && (a.out.dtype == a.x.dtype || a.out.dtype == DType::F32);
  const bool has_bias = a.bias.defined();
  if (direct) {
    if (has_bias)
      launch_bias_fill(a.out.data, a.out.dtype, a.out.strides[0], a.bias.data, a.bias.dtype, M, N, native_stream(s));
    gemm(s, {a.w.data, a.w.dtype, a.w.strides[0], nullptr}, {a.x.data, a.x.dtype, a.x.strides[0], nullptr},
         a.out.data, a.out.dtype, a.out.strides[0], M, N, K, has_bias ? 1.f : 0.f);
    return;
  }
  Operand w = as_f32(a.w, s), x = as_f32(a.x, s);
  std::shared_ptr<void> tmp;
  void* out = a.out.data;
  int64_t out_ld = a.out.strides[0];
  if (a.out.dtype != DType::F32) {
    tmp = scratch(s, size_t(M * N) * 4);
    out = tmp.get();
    out_ld = N;
  }
  if (has_bias) launch_bias_fill(out, DType::F32, out_ld, a.bias.data, a.bias.dtype, M, N, native_stream(s));
  gemm(s, w, x, out, DType::F32, out_ld, M, N, K, has_bias ? 1.f : 0.f);
  if (tmp) launch_convert(a.out.data, a.out.dtype, out, DType::F32, M, N, a.out.strides[0], out_ld, native_stream(s));
}

bool supports(const OpDesc& d, const DeviceCaps& c) {
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  if (!is_float(x) || !is_float(w) || !is_float(o)) return false;
  if ((x == DType::BF16 || w == DType::BF16) && !c.bf16_blas) return false;
  return true;
}
}  // namespace

void register_matmul_kernels() {
  register_kernel<MatmulArgs>(Op::MATMUL, kKind, "gpu.matmul_blas", 10, supports, matmul);
}

}  // namespace portllm::gpu
