// Matmul cases: GEMV-sized and GEMM-sized M, odd N/K, bias, f32/f16/bf16 weights, and fp8
// weights with 128x128 block scales (partial edge blocks) or a per-tensor scale.
#include <cmath>
#include <limits>

#include "ops/conformance/cases.h"
#include "ops/op_args.h"

namespace portllm::conformance {

OpCase matmul_case(DType act, DType wt, MatmulShape s, int block) {
  CaseRng r(uint64_t(s.M * 1009 + s.N * 31 + s.K + int(wt)));
  OpCase c;
  c.op = wt == DType::F8E4M3 ? Op::MATMUL_FP8_BLOCK : Op::MATMUL;
  c.name = fmt::format("M={} N={} K={} w={}{}{}{}", s.M, s.N, s.K, dtype_name(wt), s.bias ? " bias" : "",
                       wt == DType::F8E4M3 ? (block ? " block128" : " per-tensor") : "", s.f32_out ? " out=f32" : "");
  const double wscale = 1.0 / std::sqrt(double(s.K));
  Tensor w = wt == DType::F8E4M3 ? r.tensor(wt, {s.N, s.K}, -448, 448) : r.tensor(wt, {s.N, s.K}, -wscale, wscale);
  Tensor scale;
  if (wt == DType::F8E4M3)
    scale = block ? r.tensor(DType::F32, {(s.N + block - 1) / block, (s.K + block - 1) / block}, 0.5 * wscale / 448, 1.5 * wscale / 448)
                  : r.tensor(DType::F32, {1}, wscale / 448, wscale / 448);
  Tensor bias = s.bias ? r.tensor(act, {s.N}) : Tensor();
  c.tensors = {CaseRng::filled(DType::F32, {s.M, s.N}, std::numeric_limits<double>::quiet_NaN()),
               r.tensor(act, {s.M, s.K}), w, bias, scale};
  // Output f32 (as lm_head needs) for f32 activations; activation dtype otherwise.
  if (act != DType::F32 && !s.f32_out)
    c.tensors[0] = CaseRng::filled(act, {s.M, s.N}, std::numeric_limits<double>::quiet_NaN());
  c.outputs = {0};
  c.tol = std::max(default_tolerance(act), default_tolerance(wt == DType::F8E4M3 ? DType::BF16 : wt));
  if (wt == DType::F8E4M3) c.tol = 2e-2;  // kernels may quantize activations per token group (W8A8)
  c.invoke = [block](const std::vector<Tensor>& t, const ArgsSink& sink) {
    MatmulArgs a{t[0], t[1], t[2], t[3], t[4], block, block};
    sink(a.desc(), &a);
  };
  return c;
}

namespace {
using Shape = MatmulShape;
const Shape kShapes[] = {{1, 13, 7, false}, {2, 64, 96, true}, {3, 100, 200, false}, {4, 256, 512, false},
                         {5, 7, 13, true},  {7, 300, 128, false}, {13, 130, 257, true}, {64, 128, 256, false},
                         {33, 512, 1024, false}, {1, 2048, 1024, false},
                         // A batch size decode graphs capture, then one that borrows its GEMM
                         // choice (gpu.matmul_lt_tuned times 40 and reuses its algorithm at 37).
                         {40, 256, 512, false}, {37, 256, 512, true}};

// Decode projections at batch 1 for GPU kernels that hold all of W on the chip
// (gpu.gemv_preload): Qwen3-30B-A3B's o_proj (taken when PORTLLM_GEMV_PRELOAD_MAX_KB allows), a
// bias and a one-row last block, and 3 and 4 row tiles per block on the H200's units. Then two
// that gpu.gemv_preload refuses (K % 128 != 0) and the streaming GEMV takes in its whole-slice
// form (gemv.cu, kPre): 8 vectors per lane with a short last one and a partial last block; 4
// with two K slices, the second one short. 16-bit weights only: the CPU kernels take none of them.
const Shape kDecodeShapes[] = {{1, 2048, 4096, false}, {1, 1000, 2048, true}, {1, 4960, 256, true},
                               {1, 7936, 128, false},  {1, 1000, 1800, true}, {1, 520, 1000, true}};

// Decode-batch GEMMs (2 < M <= 256) for GPU kernels that tile W's rows and tokens and may split
// K: token counts that fill 64-, 128- and 256-row tiles partly, a partial last row tile, K not a
// multiple of 64, deep K, a bias, f32 logits. 16-bit weights only.
const Shape kDecodeGemmShapes[] = {{2, 256, 512, false},         {17, 136, 2048, true},
                                   {100, 1000, 704, false},      {129, 384, 1032, true},
                                   {200, 640, 4096, false},      {256, 512, 2048, false, true},
                                   {64, 128, 8192, false},       {250, 2056, 256, true, true}};

std::vector<OpCase> matmul_cases(DType act) {
  std::vector<OpCase> v;
  for (DType wt : {DType::F32, DType::BF16, DType::F16}) {
    if (act != DType::F32 && wt != act) continue;  // GPU GEMMs take matching operand dtypes
    for (const Shape& s : kShapes) v.push_back(matmul_case(act, wt, s, 0));
    if (wt == act && wt != DType::F32) {
      for (const Shape& s : kDecodeShapes) v.push_back(matmul_case(act, wt, s, 0));
      for (const Shape& s : kDecodeGemmShapes) v.push_back(matmul_case(act, wt, s, 0));
    }
  }
  return v;
}

std::vector<OpCase> fp8_cases(DType act) {
  std::vector<OpCase> v;
  for (Shape s : {Shape{1, 256, 384, false}, Shape{5, 300, 200, false}, Shape{13, 128, 256, false},
                  Shape{64, 512, 512, false}, Shape{2, 7168 / 8, 2048, false}}) {
    v.push_back(matmul_case(act, DType::F8E4M3, s, 128));
  }
  v.push_back(matmul_case(act, DType::F8E4M3, Shape{3, 64, 96, false}, 0));
  // Prefill-sized M (the dequantize + BLAS path takes M >= 32), bias, partial edge blocks.
  v.push_back(matmul_case(act, DType::F8E4M3, Shape{100, 384, 640, true}, 128));
  v.push_back(matmul_case(act, DType::F8E4M3, Shape{40, 200, 300, true}, 0));
  // The dequantize + BLAS path's 16-wide form (K and block_k multiples of 16), per-tensor scale.
  v.push_back(matmul_case(act, DType::F8E4M3, Shape{48, 96, 160, false}, 0));
  v.push_back(matmul_case(act, DType::F8E4M3, Shape{17, 136, 72, true}, 128));
  // Shapes the W8A8 path (gpu.matmul_fp8_w8a8_lt) takes with bf16/f16 activations: M >= 8, no bias,
  // N % 16 == 0, K % 128 == 0; M = 37 exercises its padding of M to 4s.
  // K % 128 == 0 with K/128 not a multiple of 4 (5, 3): W's scale rows are copied, zero-padded, to
  // the length cuBLASLt reads (DeepSeek-V2-Lite's shared experts: K = 2816, 22 blocks).
  for (Shape s : {Shape{64, 256, 512, false}, Shape{100, 384, 1024, false}, Shape{37, 128, 512, false},
                  Shape{64, 256, 640, false}, Shape{40, 128, 384, false}})
    v.push_back(matmul_case(act, DType::F8E4M3, s, 128));
  // Decode sizes at the edges of those paths: N % 16 != 0 (the dequantizing path takes it), M = 128,
  // and K / 128 = 22 scale columns at M = 33 (V2-Lite's shared experts' down at a small batch).
  for (Shape s : {Shape{48, 200, 256, false}, Shape{128, 256, 384, false}, Shape{33, 128, 2816, false}})
    v.push_back(matmul_case(act, DType::F8E4M3, s, 128));
  // Small decode batches (8 <= M < 32), which the W8A8 path takes from 8 rows
  // (PORTLLM_W8A8_MIN_ROWS): M = 8, 16, 24 and, padded to a multiple of 4, 9 and 22; 22 scale
  // columns (K = 2816) at M = 16.
  for (Shape s : {Shape{8, 256, 384, false}, Shape{9, 128, 512, false}, Shape{16, 128, 2816, false},
                  Shape{22, 384, 256, false}, Shape{24, 256, 640, false}})
    v.push_back(matmul_case(act, DType::F8E4M3, s, 128));
  return v;
}
}  // namespace

void register_matmul_cases() {
  register_case_generator(Op::MATMUL, matmul_cases);
  register_case_generator(Op::MATMUL_FP8_BLOCK, fp8_cases);
}

}  // namespace portllm::conformance
