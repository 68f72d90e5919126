// MATMUL at decode sizes (M <= kMaxRows) through cuBLASLt with the algorithm chosen by timing,
// NVIDIA only (ARCHITECTURE.md rule 4; the portable sibling is gpu.matmul_blas, matmul.cpp).
//
// Why: cublasGemmEx's default algorithm is a heuristic pick, and at some decode batch sizes it is
// far from the best the library has. scripts/gemm_probe.cu (gpu-check.sh `gemm`, H200, weights
// rotated so they come from memory) on Qwen3-8B's projections: down_proj (4096 x 12288) at M = 192
// 55.1 us by default against 38.8 us for another of the heuristic's algorithms, o_proj (4096 x
// 4096) at M = 256 19.4 against 16.6; elsewhere within 0-5%.
// The first call for a problem (device, M, N, K, strides, dtypes, alignments) times cublasGemmEx
// and every algorithm cuBLASLt's heuristic offers (up to kCandidates, split-K ones included) on the
// call's own operands, each run after an L2 eviction that only reads (l2_flush.cu) so the weights
// come from memory as in a model step, and keeps the fastest by median; later calls reuse the
// choice and its descriptors. Only the batch sizes decode graphs capture are timed (M a power of two or a multiple of
// 8): decode graphs run each size eagerly once before capturing it (decode_graphs.cpp), so the
// captured steps use tuned choices and no step of a running engine waits for a tuning. Another M
// takes the choice of the next multiple of 8 when cuBLASLt accepts it for this M (AlgoCheck),
// else cublasGemmEx. A call made while its stream is capturing never times anything either.
//
// The row-major problem out[M,N] = x[M,K] W[N,K]^T is, as in matmul.cpp, the column-major
// D = op(A) B with A = W (transa = T), B = x, D = out: m = N, n = M, k = K.
//
// PORTLLM_GEMM_TUNE: "0" turns this kernel off (gpu.matmul_blas then serves every shape);
// "verbose" prints one line per tuned problem: cublasGemmEx's time and the chosen algorithm's.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_check.h"
#include "backends/gpu/gpu_device.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/gpu_runtime.h"
#include "ops/op_args.h"
#include "ops/registry.h"
#if !defined(PORTLLM_GPU_MUSA)
#include "backends/gpu/blas_lt.h"
#endif

namespace portllm::gpu {

#if !defined(PORTLLM_GPU_MUSA)
namespace {
constexpr auto kKind = kGpuKind;
constexpr const char* kName = "gpu.matmul_lt_tuned";
// Decode batch sizes (the default graph sizes end at 256). Larger problems are compute bound, where
// cuBLAS' default choice is good (prefill at 0.63-0.65 of the bf16 peak).
constexpr int64_t kMaxRows = 256;
constexpr int kCandidates = 16;
constexpr int kReps = 5;
constexpr size_t kMaxWorkspace = size_t(32) << 20;  // cuBLAS' recommendation for Hopper
// Read before each timed run to evict the operands from L2 (50 MiB on H100/H200).
constexpr size_t kFlushBytes = size_t(128) << 20;

enum class Mode { On, Off, Verbose };  // in env_switch's word order
Mode mode() {
  static const Mode m = Mode(env_switch("PORTLLM_GEMM_TUNE", {"1", "0", "verbose"}, 0));
  return m;
}

struct Problem {
  int device;
  int64_t m, n, k, lda, ldb, ldd;
  DType in_t, out_t;
  uint32_t align_a, align_b, align_d;
  auto tie() const { return std::tie(device, m, n, k, lda, ldb, ldd, in_t, out_t, align_a, align_b, align_d); }
  bool operator<(const Problem& o) const { return tie() < o.tie(); }
};

// The tuned choice: a cuBLASLt algorithm with the problem's descriptors, or cublasGemmEx's
// default (call null) when it was the fastest or cuBLASLt refused a borrowed algorithm. This GEMM
// sets no per-call descriptor attributes, so one set of descriptors serves every call: a call is
// a map lookup and the GEMM.
struct Choice {
  std::shared_ptr<const LtCall> call;
  gpublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

std::mutex g_mu;
std::map<Problem, Choice> g_choices;

// One GEMM's operands; beta = 1 adds onto D (the bias broadcast into out beforehand).
struct Gemm {
  const void* w;
  const void* x;
  void* d;
  float beta;
};

std::string shape_str(const Problem& p) {
  return fmt::format("M={} N={} K={} {}->{}", p.n, p.m, p.k, dtype_name(p.in_t), dtype_name(p.out_t));
}

// The descriptors of problem p (c.pref stays null).
std::shared_ptr<LtCall> describe(const Problem& p, const std::string& shape) {
  auto call = std::make_shared<LtCall>();
  LtCall& c = *call;
  PL_LT_CHECK(kName, gpublasLtMatmulDescCreate(&c.desc, GPUBLAS_COMPUTE_32F, GPU_R_32F), shape);
  lt_set_attr(c.desc, GPUBLASLT_MATMUL_DESC_TRANSA, int32_t(GPUBLAS_OP_T), kName, shape);
  lt_set_attr(c.desc, GPUBLASLT_MATMUL_DESC_TRANSB, int32_t(GPUBLAS_OP_N), kName, shape);
  const gpuDataType_t in = blas_type(p.in_t), out = blas_type(p.out_t);
  PL_LT_CHECK(kName, gpublasLtMatrixLayoutCreate(&c.a, in, uint64_t(p.k), uint64_t(p.m), p.lda), shape);
  PL_LT_CHECK(kName, gpublasLtMatrixLayoutCreate(&c.b, in, uint64_t(p.k), uint64_t(p.n), p.ldb), shape);
  PL_LT_CHECK(kName, gpublasLtMatrixLayoutCreate(&c.d, out, uint64_t(p.m), uint64_t(p.n), p.ldd), shape);
  return call;
}

gpublasStatus_t run_gemm_ex(const Problem& p, const Gemm& g, gpublasHandle_t h) {
  const float alpha = 1.f;
  return gpublasGemmEx(h, GPUBLAS_OP_T, GPUBLAS_OP_N, int(p.m), int(p.n), int(p.k), &alpha, g.w, blas_type(p.in_t),
                       int(p.lda), g.x, blas_type(p.in_t), int(p.ldb), &g.beta, g.d, blas_type(p.out_t), int(p.ldd),
                       GPUBLAS_COMPUTE_32F, GPUBLAS_GEMM_DEFAULT);
}

gpublasStatus_t run_lt(const LtCall& c, const gpublasLtMatmulAlgo_t& algo, void* ws, size_t ws_bytes, const Gemm& g,
                       gpuStream_t st) {
  const float alpha = 1.f;
  return gpublasLtMatmul(lt_handle(), c.desc, &alpha, g.w, c.a, g.x, c.b, &g.beta, g.d, c.d, g.d, c.d, &algo, ws,
                         ws_bytes, st);
}

int algo_config(const gpublasLtMatmulAlgo_t& a, decltype(GPUBLASLT_ALGO_CONFIG_TILE_ID) attr) {
  int32_t v = -1;
  size_t written = 0;
  (void)gpublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof(v), &written);
  return v;
}

// Times cublasGemmEx and the heuristic's candidates for p into a scratch D; returns the fastest.
Choice tune(const Problem& p, const Gemm& g, Stream& s) {
  const std::string shape = shape_str(p);
  const std::shared_ptr<LtCall> call = describe(p, shape);
  LtCall& c = *call;
  auto& gs = dynamic_cast<GpuStream&>(s);
  const gpuStream_t st = gs.get();
  gpublasHandle_t h = gs.device().blas(st);

  lt_preference(c, kMaxWorkspace, p.align_a, p.align_b, p.align_d, kName, shape);
  std::vector<gpublasLtMatmulHeuristicResult_t> found(kCandidates);
  int n_found = 0;
  if (gpublasLtMatmulAlgoGetHeuristic(lt_handle(), c.desc, c.a, c.b, c.d, c.d, c.pref, kCandidates, found.data(),
                                      &n_found) != GPUBLAS_STATUS_SUCCESS)
    n_found = 0;
  found.resize(size_t(std::max(n_found, 0)));

  auto dscratch = scratch(s, size_t(p.m * p.n) * dtype_size(p.out_t));
  auto ws = scratch(s, kMaxWorkspace);
  auto flush = scratch(s, kFlushBytes);
  PL_GPU_CHECK(gpuMemsetAsync(flush.get(), 0, kFlushBytes, st));  // defined reads (compute-sanitizer initcheck)
  const Gemm t{g.w, g.x, dscratch.get(), 0.f};  // timed runs write the scratch D
  // Candidate 0 is cublasGemmEx; candidate i > 0 is found[i - 1]. One untimed run each first: it
  // drops candidates that fail and takes first-call costs out of the timing.
  auto run = [&](size_t i) {
    return i == 0 ? run_gemm_ex(p, t, h) : run_lt(c, found[i - 1].algo, ws.get(), kMaxWorkspace, t, st);
  };
  std::vector<size_t> live;
  for (size_t i = 0; i <= found.size(); ++i)
    if (run(i) == GPUBLAS_STATUS_SUCCESS) live.push_back(i);
  PL_CHECK(!live.empty() && live[0] == 0, "{} ({}): cublasGemmEx fails for this problem", kName, shape);

  std::vector<gpuEvent_t> ev(live.size() * kReps * 2);
  for (auto& e : ev) PL_GPU_CHECK(gpuEventCreate(&e));
  for (int r = 0; r < kReps; ++r)
    for (size_t j = 0; j < live.size(); ++j) {
      launch_l2_flush(flush.get(), kFlushBytes, st);
      gpuEvent_t* e = &ev[(j * kReps + size_t(r)) * 2];
      PL_GPU_CHECK(gpuEventRecord(e[0], st));
      (void)run(live[j]);
      PL_GPU_CHECK(gpuEventRecord(e[1], st));
    }
  PL_GPU_CHECK(gpuEventSynchronize(ev.back()));
  std::vector<float> median(live.size());
  for (size_t j = 0; j < live.size(); ++j) {
    float ms[kReps];
    for (int r = 0; r < kReps; ++r)
      PL_GPU_CHECK(gpuEventElapsedTime(&ms[r], ev[(j * kReps + size_t(r)) * 2], ev[(j * kReps + size_t(r)) * 2 + 1]));
    std::sort(ms, ms + kReps);
    median[j] = ms[kReps / 2];
  }
  for (auto& e : ev) (void)gpuEventDestroy(e);

  const size_t best = size_t(std::min_element(median.begin(), median.end()) - median.begin());
  Choice ch;
  if (live[best] != 0) {
    const auto& r = found[live[best] - 1];
    ch.call = call;
    ch.algo = r.algo;
    ch.workspace = r.workspaceSize;
  }
  if (mode() == Mode::Verbose) {
    std::string pick = "cublasGemmEx";
    if (ch.call)
      pick = fmt::format("cuBLASLt #{} (tile {}, split-k {})", live[best] - 1,
                         algo_config(ch.algo, GPUBLASLT_ALGO_CONFIG_TILE_ID),
                         algo_config(ch.algo, GPUBLASLT_ALGO_CONFIG_SPLITK_NUM));
    fmt::print(stderr, "portllm: gemm tune {}: cublasGemmEx {:.1f} us, {} {:.1f} us ({} of {} candidates ran)\n",
               shape, median[0] * 1e3f, pick, median[best] * 1e3f, live.size(), found.size() + 1);
  }
  return ch;
}

// The batch sizes that get timed: those decode graphs capture (DecodeGraphs::default_sizes).
bool timed_size(int64_t m) { return m % 8 == 0 || (m & (m - 1)) == 0; }

bool capturing(Stream& s) {
  gpuStreamCaptureStatus cs = gpuStreamCaptureStatusNone;
  PL_GPU_CHECK(gpuStreamIsCapturing(native_stream(s), &cs));
  return cs != gpuStreamCaptureStatusNone;
}

// The choice of p as cached, or made now: timed (a size decode graphs capture, outside a
// capture), or borrowed from the next timed size when cuBLASLt accepts that algorithm for p.
// Null: no choice yet (cublasGemmEx, and ask again next time).
const Choice* choice_for(const Problem& p, const Gemm& g, Stream& s) {
  auto cached = [](const Problem& q) -> const Choice* {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_choices.find(q);
    return it == g_choices.end() ? nullptr : &it->second;  // std::map nodes do not move
  };
  auto keep = [](const Problem& q, Choice ch) -> const Choice* {
    std::lock_guard<std::mutex> lock(g_mu);
    return &g_choices.emplace(q, std::move(ch)).first->second;
  };
  if (const Choice* c = cached(p)) return c;
  if (timed_size(p.n)) return capturing(s) ? nullptr : keep(p, tune(p, g, s));
  Problem q = p;
  q.n = (p.n + 7) / 8 * 8;  // the next timed size
  const Choice* from = cached(q);
  if (!from) return nullptr;
  Choice ch;
  if (from->call) {
    auto call = describe(p, shape_str(p));
    gpublasLtMatmulHeuristicResult_t r{};
    if (gpublasLtMatmulAlgoCheck(lt_handle(), call->desc, call->a, call->b, call->d, call->d, &from->algo, &r) ==
            GPUBLAS_STATUS_SUCCESS &&
        r.workspaceSize <= kMaxWorkspace)
      ch = Choice{std::move(call), from->algo, r.workspaceSize};
  }
  return keep(p, std::move(ch));
}

void matmul_lt_tuned(const MatmulArgs& a, Stream& s) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  PL_CHECK(a.x.size(1) == K && a.out.size(0) == M && a.out.size(1) == N, "{}: x {} W {} out {}", kName,
           a.x.shape_str(), a.w.shape_str(), a.out.shape_str());
  if (M == 0 || N == 0) return;
  const bool has_bias = a.bias.defined();
  if (has_bias)
    launch_bias_fill(a.out.data, a.out.dtype, a.out.strides[0], a.bias.data, a.bias.dtype, M, N, native_stream(s));
  const Gemm g{a.w.data, a.x.data, a.out.data, has_bias ? 1.f : 0.f};
  auto& gs = dynamic_cast<GpuStream&>(s);
  const Problem p{gs.device().index(),
                  N,
                  M,
                  K,
                  a.w.strides[0],
                  a.x.strides[0],
                  a.out.strides[0],
                  a.x.dtype,
                  a.out.dtype,
                  alignment_of(a.w.data),
                  alignment_of(a.x.data),
                  alignment_of(a.out.data)};
  const Choice* ch = choice_for(p, g, s);
  if (ch && ch->call) {
    std::shared_ptr<void> ws;
    if (ch->workspace > 0) ws = scratch(s, ch->workspace);
    const gpublasStatus_t st = run_lt(*ch->call, ch->algo, ws.get(), ch->workspace, g, native_stream(s));
    if (st == GPUBLAS_STATUS_SUCCESS) return;
    PL_THROW("{} ({}): cublasLtMatmul with the tuned algorithm failed: {}", kName, shape_str(p),
             gpublasGetStatusString(st));
  }
  PL_GPUBLAS_CHECK(run_gemm_ex(p, g, gs.device().blas(gs.get())));
}

// Matching bf16/f16 operands, out in their dtype or f32 (the logits), at decode sizes.
bool supports(const OpDesc& d, const DeviceCaps& c) {
  if (mode() == Mode::Off || c.vendor != "nvidia" || !c.bf16_blas) return false;
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  if ((x != DType::BF16 && x != DType::F16) || w != x || (o != x && o != DType::F32)) return false;
  const int64_t M = d.dim[0];
  return M >= 1 && M <= kMaxRows;
}
}  // namespace

void register_matmul_lt_tuned_kernels() {
  // Above gpu.matmul_blas (10), below the M = 1 GEMV (20).
  register_kernel<MatmulArgs>(Op::MATMUL, kKind, kName, 15, supports, matmul_lt_tuned);
}
#else
void register_matmul_lt_tuned_kernels() {}  // NVIDIA-only fast path; MUSA uses gpu.matmul_blas
#endif

}  // namespace portllm::gpu
