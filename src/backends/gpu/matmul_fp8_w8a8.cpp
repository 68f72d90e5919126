// MATMUL_FP8_BLOCK on fp8 tensor cores (W8A8, DeepSeek-V3 style), NVIDIA Hopper only:
//   1. x is quantized per token and per 128-wide K group to e4m3 with one f32 scale each
//      (fp8_quant.cu, portable);
//   2. one cuBLASLt block-scaled FP8 GEMM multiplies the e4m3 codes and applies both scales:
//      the weight's 128x128 block scales (BLK128x128_32F) and the activation's 1x128 group scales
//      (VEC128_32F), f32 accumulation, out in bf16/f16/f32.
// NVIDIA-only fast path (ARCHITECTURE.md rule 4): cuBLASLt's 128-element / 128x128 scale modes are
// a Hopper feature (cuBLAS docs 3.1.4.5), and neither MUSA's muBLASLt equivalent nor the MUSA
// emulation headers have them. Its portable sibling is gpu.matmul_fp8_dequant_blas (matmul_fp8.cpp),
// which MUSA builds use and which this kernel falls back to, with a warning, when cuBLASLt offers
// no algorithm or fails for a shape, or when a view does not meet the GEMM's layout rules.
//
// The row-major problem out[M,N] = x[M,K] W[N,K]^T maps to cuBLASLt's column-major GEMM as
// D = op(A) B with A = W (a K x N column-major matrix, transa = T), B = x8 (K x M column-major,
// transb = N), D = out (N x M column-major): m = N, n = M, k = K. The scale layouts, from the cuBLAS
// docs ("Scaling factors layouts") and PyTorch's _scaled_block1x128_block128x128, which calls the
// same cuBLASLt mode:
//  * A (W), BLK128x128_32F: K-major, shape ceil(K/128) rounded up to 4 x ceil(N/128), so element
//    (kb, nb) at nb * Kb4 + kb. The checkpoint's w_scale [ceil(N/128), ceil(K/128)] row-major is
//    exactly that when K/128 is a multiple of 4 (every DeepSeek-V3 K: 7168, 18432, 2048, 1536,
//    512). Other K % 128 == 0 (DeepSeek-V2-Lite's shared experts, K = 2816: 22 blocks) get their
//    scale rows copied, zero-padded to Kb4, into scratch per call (a few KB; zeros, so whatever
//    cuBLASLt reads past K/128 contributes nothing).
//  * B (x8), VEC128_32F: N-major (cuBLAS n = our M), shape n x ceil(K/128), so element (m, kb) at
//    kb * n + m, the layout fp8_quant.cu writes.
//  * cuBLAS m and n must be multiples of 4: N is (N % 16 == 0); M is padded to a multiple of 4
//    with zero rows, and then D goes to scratch and its first M rows are copied out.
// Scale pointers must be 16-byte aligned.
#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_check.h"
#include "backends/gpu/gpu_device.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/gpu_runtime.h"
#include "ops/op_args.h"
#include "ops/registry.h"
#if !defined(PORTLLM_GPU_MUSA)
#include "backends/gpu/blas_lt.h"
#include "backends/gpu/fp8_quant.h"
#endif

namespace portllm::gpu {

#if !defined(PORTLLM_GPU_MUSA)
namespace {
constexpr auto kKind = kGpuKind;
constexpr const char* kName = "gpu.matmul_fp8_w8a8_lt";
constexpr const char* kFallbackName = "gpu.matmul_fp8_dequant_blas";
constexpr int64_t kBlock = 128;
// Below this M the fp8 GEMV (matmul_fp8.cpp) serves the GEMM; PORTLLM_W8A8_MIN_ROWS (read once)
// moves the bound. From 8 rows this kernel measured faster than the GEMV (V2-Lite's q_proj at 16
// rows 11.0 against 26.8 us; the GSM8K-shaped V2-Lite FP8 serve 5127-5152 against 4975 out tok/s
// with the bound at 32; BENCHMARKS.md, twenty-ninth and thirtieth sessions).
int64_t min_rows() {
  static const int64_t v = std::max(1, env_int("PORTLLM_W8A8_MIN_ROWS", 8));
  return v;
}
// The most workspace the heuristic may ask for (cuBLAS recommends 32 MiB on Hopper); the chosen
// algorithm's own size is what gets allocated.
constexpr size_t kMaxWorkspace = size_t(32) << 20;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

gpuDataType_t lt_out_type(DType t) {
  switch (t) {
    case DType::F32: return GPU_R_32F;
    case DType::BF16: return GPU_R_16BF;
    case DType::F16: return GPU_R_16F;
    default: PL_THROW("{}: unsupported output dtype {}", kName, dtype_name(t));
  }
}

// PORTLLM_W8A8: "0" turns this kernel off (the dequantizing paths then serve every shape, e.g. to
// compare accuracy); "strict" makes every fallback an error (to prove the cuBLASLt path ran).
enum class Mode { On, Off, Strict };  // in env_switch's word order
Mode mode() {
  static const Mode m = Mode(env_switch("PORTLLM_W8A8", {"1", "0", "strict"}, 0));
  return m;
}

// One GEMM problem as cuBLASLt sees it; the heuristic's choice is cached per key.
struct ShapeKey {
  int device;
  int64_t m, n, k, lda, ldd;
  DType out_t;
  uint32_t align_a, align_d;
  auto tie() const { return std::tie(device, m, n, k, lda, ldd, out_t, align_a, align_d); }
  bool operator<(const ShapeKey& o) const { return tie() < o.tie(); }
};

struct Plan {
  bool ok = false;
  gpublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  std::string why;  // when !ok: what cuBLASLt said
};

std::mutex g_mu;
std::map<ShapeKey, Plan> g_plans;
std::set<std::string> g_warned;

std::string shape_str(int64_t M, int64_t N, int64_t K, DType out_t) {
  return fmt::format("M={} N={} K={} out={}", M, N, K, dtype_name(out_t));
}

void warn_once(const std::string& what) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_warned.insert(what).second)
    fmt::print(stderr, "portllm: warning: {}: {}; using {} for this shape\n", kName, what, kFallbackName);
}

void fallback(const MatmulArgs& a, Stream& s, const std::string& why) {
  if (mode() == Mode::Strict) PL_THROW("{}: {} (PORTLLM_W8A8=strict forbids the fallback)", kName, why);
  warn_once(why);
  const KernelInfo* k = KernelRegistry::instance().find(kFallbackName);
  PL_CHECK(k && (!k->supports || k->supports(a.desc(), caps_of(s))), "{}: fallback {} is not available for {}",
           kName, kFallbackName, why);
  k->run(&a, s);
}

// Why the views of a cannot feed the GEMM as they are, or "" when they can. supports() has
// checked dtypes, M, N, K, block_k and bias; these are the per-call facts it cannot see.
std::string layout_problem(const MatmulArgs& a, int64_t N, int64_t K) {
  const int64_t kb = K / kBlock;
  if (a.block_n != kBlock) return fmt::format("block_n {} (only 128x128 weight blocks)", a.block_n);
  if (a.x.strides[1] != 1 || a.w.strides[1] != 1 || a.out.strides[1] != 1) return "a non-contiguous last dim";
  if (a.w.strides[0] % 16 != 0 || !aligned16(a.w.data)) return "W rows not 16-byte aligned";
  if ((a.out.strides[0] * dtype_size(a.out.dtype)) % 16 != 0 || !aligned16(a.out.data))
    return "out rows not 16-byte aligned";
  const Tensor& sc = a.w_scale;
  if (!sc.defined() || sc.dtype != DType::F32 || sc.ndim != 2 || sc.size(0) < (N + kBlock - 1) / kBlock ||
      sc.size(1) < kb)
    return fmt::format("w_scale {} does not cover W [{}, {}] in 128x128 blocks", sc.shape_str(), N, K);
  if (sc.strides[1] != 1) return fmt::format("w_scale strides ({}, {}) (need contiguous rows)", sc.strides[0], sc.strides[1]);
  return "";
}

// The cached heuristic choice for key; the first call for a key asks cuBLASLt.
Plan plan_for(const ShapeKey& key, LtCall& c, const std::string& shape) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_plans.find(key);
    if (it != g_plans.end()) return it->second;
  }
  Plan p;
  const uint32_t al_b = 256;  // x8 lives in a fresh scratch allocation
  lt_preference(c, kMaxWorkspace, key.align_a, al_b, key.align_d, kName, shape);
  gpublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  const gpublasStatus_t st =
      gpublasLtMatmulAlgoGetHeuristic(lt_handle(), c.desc, c.a, c.b, c.d, c.d, c.pref, 1, &r, &found);
  if (st != GPUBLAS_STATUS_SUCCESS) {
    p.why = fmt::format("cublasLtMatmulAlgoGetHeuristic failed for {}: {}", shape, gpublasGetStatusString(st));
  } else if (found == 0) {
    p.why = fmt::format("cuBLASLt has no block-scaled FP8 algorithm for {}", shape);
  } else {
    p.ok = true;
    p.algo = r.algo;
    p.workspace = r.workspaceSize;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_plans.emplace(key, p);
  return p;
}

void mark_failed(const ShapeKey& key, const std::string& why) {
  std::lock_guard<std::mutex> lock(g_mu);
  Plan& p = g_plans[key];
  p.ok = false;
  p.why = why;
}

void matmul_fp8_w8a8(const MatmulArgs& a, Stream& s) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  PL_CHECK(a.x.size(1) == K && a.out.size(0) == M && a.out.size(1) == N, "{}: x {} W {} out {}", kName,
           a.x.shape_str(), a.w.shape_str(), a.out.shape_str());
  if (M == 0 || N == 0) return;
  const std::string shape = shape_str(M, N, K, a.out.dtype);
  if (std::string why = layout_problem(a, N, K); !why.empty()) return fallback(a, s, shape + ": " + why);

  // 1. Quantize x into scratch: codes [Mp, K], scales group-major [K/128, Mp].
  const int64_t Mp = round_up(M, 4);
  auto x8 = scratch(s, size_t(Mp * K));
  auto xs = scratch(s, size_t(Mp * (K / kBlock)) * 4);
  launch_fp8_quant_groups(a.x.data, a.x.dtype, a.x.strides[0], M, K, Mp, static_cast<uint8_t*>(x8.get()),
                          static_cast<float*>(xs.get()), s);

  // cuBLASLt reads row nb of W's BLK128x128 scales at nb * round_up(K/128, 4), 16-byte aligned:
  // the checkpoint's rows where they are that long, else a zero-padded copy.
  const int64_t kb4 = round_up(K / kBlock, 4), nb = (N + kBlock - 1) / kBlock;
  const void* wsc = a.w_scale.data;
  std::shared_ptr<void> wsc_pad;
  if (a.w_scale.strides[0] != kb4 || !aligned16(wsc)) {
    wsc_pad = scratch(s, size_t(nb * kb4) * sizeof(float));
    launch_pad_scale_rows(static_cast<float*>(wsc_pad.get()), kb4, a.w_scale.ptr<float>(), a.w_scale.strides[0], nb,
                          K / kBlock, s);
    wsc = wsc_pad.get();
  }

  // 2. D: out itself, or a padded scratch [Mp, N] when M is not a multiple of 4.
  std::shared_ptr<void> dpad;
  void* d = a.out.data;
  int64_t ldd = a.out.strides[0];
  if (Mp != M) {
    dpad = scratch(s, size_t(Mp * N) * dtype_size(a.out.dtype));
    d = dpad.get();
    ldd = N;
  }

  LtCall c;
  const gpuDataType_t dt = lt_out_type(a.out.dtype);
  PL_LT_CHECK(kName, gpublasLtMatmulDescCreate(&c.desc, GPUBLAS_COMPUTE_32F, GPU_R_32F), shape);
  lt_set_attr(c.desc, GPUBLASLT_MATMUL_DESC_TRANSA, int32_t(GPUBLAS_OP_T), kName, shape);
  lt_set_attr(c.desc, GPUBLASLT_MATMUL_DESC_TRANSB, int32_t(GPUBLAS_OP_N), kName, shape);
  lt_set_attr(c.desc, GPUBLASLT_MATMUL_DESC_A_SCALE_MODE, int32_t(GPUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F), kName, shape);
  lt_set_attr(c.desc, GPUBLASLT_MATMUL_DESC_B_SCALE_MODE, int32_t(GPUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F), kName, shape);
  lt_set_attr(c.desc, GPUBLASLT_MATMUL_DESC_A_SCALE_POINTER, wsc, kName, shape);
  lt_set_attr(c.desc, GPUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(xs.get()), kName, shape);
  PL_LT_CHECK(kName, gpublasLtMatrixLayoutCreate(&c.a, GPU_R_8F_E4M3, uint64_t(K), uint64_t(N), a.w.strides[0]), shape);
  PL_LT_CHECK(kName, gpublasLtMatrixLayoutCreate(&c.b, GPU_R_8F_E4M3, uint64_t(K), uint64_t(Mp), K), shape);
  PL_LT_CHECK(kName, gpublasLtMatrixLayoutCreate(&c.d, dt, uint64_t(N), uint64_t(Mp), ldd), shape);

  const int dev = dynamic_cast<GpuStream&>(s).device().index();
  const ShapeKey key{dev, N, Mp, K, a.w.strides[0], ldd, a.out.dtype, alignment_of(a.w.data), alignment_of(d)};
  const Plan p = plan_for(key, c, shape);
  if (!p.ok) return fallback(a, s, p.why);

  std::shared_ptr<void> ws;
  if (p.workspace > 0) ws = scratch(s, p.workspace);
  const float alpha = 1.f, beta = 0.f;
  const gpublasStatus_t st = gpublasLtMatmul(lt_handle(), c.desc, &alpha, a.w.data, c.a, x8.get(), c.b, &beta, d, c.d,
                                             d, c.d, &p.algo, ws.get(), p.workspace, native_stream(s));
  if (st != GPUBLAS_STATUS_SUCCESS) {
    const std::string why = fmt::format("cublasLtMatmul failed for {}: {}", shape, gpublasGetStatusString(st));
    mark_failed(key, why);
    return fallback(a, s, why);
  }
  if (dpad) launch_convert(a.out.data, a.out.dtype, d, a.out.dtype, M, N, a.out.strides[0], N, native_stream(s));
}

// Activations bf16/f16; out = activation dtype or f32 (cuBLASLt's D types for these modes). f32
// activations are left to the dequantizing paths: running in f32 asks for accuracy (check-logits
// --dtype f32 isolates kernel errors that way), which quantizing activations to e4m3 would undo.
bool supports(const OpDesc& d, const DeviceCaps& c) {
  if (mode() == Mode::Off) return false;
  // Hopper (sm_90): the 128-element / 128x128 FP8 scale modes exist on no other NVIDIA arch
  // (Ada has tensor-wide scaling only; Blackwell's block scaling is the 16/32-element MX family).
  if (c.vendor != "nvidia" || !c.fp8 || c.arch < 90 || c.arch >= 100) return false;
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  if ((x != DType::BF16 && x != DType::F16) || w != DType::F8E4M3 || (o != x && o != DType::F32)) return false;
  const int64_t M = d.dim[0], N = d.dim[1], K = d.dim[2];
  if (d.flags & 1u) return false;  // no bias (DeepSeek-V3's FP8 linears have none)
  if (d.dim[3] != kBlock) return false;  // 128x128 weight blocks (block_n is checked per call)
  if (M < min_rows() || N <= 0 || N % 16 != 0) return false;
  // Whole 128-wide K blocks (the activation groups; W's scale rows are padded per call to the
  // multiple of 4 cuBLASLt reads where they are shorter).
  if (K <= 0 || K % kBlock != 0) return false;
  return M < (int64_t(1) << 31) && N < (int64_t(1) << 31) && K < (int64_t(1) << 31);
}
}  // namespace

void register_matmul_fp8_w8a8_kernels() {
  // Above gpu.matmul_fp8_dequant_blas (20) and the fp8 GEMV (25, M < 32), which then serve what
  // this kernel refuses: fewer rows than min_rows(), a bias, other views or K.
  // e4m3 activations: relative rounding error up to 2^-4 per element; on the conformance cases'
  // uniform data the normalized error of the product is ~0.025 (dequantizing paths: ~0.003).
  register_kernel<MatmulArgs>(Op::MATMUL_FP8_BLOCK, kKind, kName, 30, supports, matmul_fp8_w8a8, 4e-2);
}
#else
void register_matmul_fp8_w8a8_kernels() {}  // NVIDIA-only fast path; MUSA uses the dequantizing siblings
#endif

}  // namespace portllm::gpu
