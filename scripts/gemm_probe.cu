// Decode-size bf16 GEMM search for scripts/gpu-check.sh (`gemm` stage): does any configuration the
// vendor BLAS offers run Qwen3-8B's projections at decode batch sizes (M = 64-256) near their
// limit (max of the weight stream and the bf16 peak)? For each shape it times
//   * the default GemmEx (what gpu.matmul_blas runs),
//   * every algorithm the Lt heuristic returns (up to 64, 64 MiB of workspace), and
//   * each of those with its split-K count forced to 1, 2, 3, 4, 6, 8 (AlgoCheck'd),
// and prints one line per shape: default, best heuristic and best overall, in us.
// Timing: 20 back-to-back runs over rotating copies of W (together > 2 x L2), so the weights come
// from memory as in a model step and no cache flush sits between runs; the mean per run.
// GEMM_PROBE_MODE=all searches every configuration the library accepts (see probe_all).
// GEMM_PROBE_MODE=split instead times a residual projection (o_proj, down) followed by the residual
// add + RMSNorm, two ways: the default GemmEx writing bf16 and a norm kernel that adds it, against
// a strided-batched GemmEx over S slices of K writing S f32 partials and a norm kernel that adds
// all S (the split-K reduction folded into the norm that follows anyway); one line per (shape, S).
// Uses only the neutral names of the GPU vendor layer.
// Build: nvcc -O2 -std=c++17 -I src -arch=sm_90 scripts/gemm_probe.cu -lcublas -lcublasLt -o gemm_probe
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/gpu/vendor/vendor.h"

#define CK(x) do { if ((x) != gpuSuccess) { std::printf("FAILED %s\n", #x); std::exit(1); } } while (0)
#define BK(x) do { if ((x) != GPUBLAS_STATUS_SUCCESS) { std::printf("FAILED %s\n", #x); std::exit(1); } } while (0)

namespace {
constexpr int kRuns = 20;
constexpr size_t kRotateBytes = size_t(256) << 20;  // W copies together at least this large
constexpr size_t kWorkspace = size_t(64) << 20;

struct Setup {
  int M, N, K;
  std::vector<void*> w;  // rotating copies of W [N, K]
  void *x, *o, *ws;
  gpuStream_t s;
  gpuEvent_t e0, e1;
};

// Mean us per run of run(copy index), over `runs` runs after 3 warm-ups; < 0 when a run fails.
template <class Run>
double time_us(Setup& st, Run run, int runs = kRuns) {
  for (int i = 0; i < 3; ++i)
    if (!run(i % int(st.w.size()))) return -1;
  CK(gpuEventRecord(st.e0, st.s));
  for (int i = 0; i < runs; ++i)
    if (!run(i % int(st.w.size()))) return -1;
  CK(gpuEventRecord(st.e1, st.s));
  CK(gpuEventSynchronize(st.e1));
  float ms = 0;
  CK(gpuEventElapsedTime(&ms, st.e0, st.e1));
  return ms * 1e3 / runs;
}

int config(const gpublasLtMatmulAlgo_t& a, decltype(GPUBLASLT_ALGO_CONFIG_TILE_ID) attr) {
  int32_t v = -1;
  size_t n = 0;
  (void)gpublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof(v), &n);
  return v;
}

// A problem's Setup with its rotating copies of W allocated and filled (x, o, ws left to the caller).
Setup with_weights(int M, int N, int K, gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1) {
  Setup st{M, N, K, {}, nullptr, nullptr, nullptr, s, e0, e1};
  const size_t wbytes = size_t(N) * K * 2;
  const size_t copies = std::max<size_t>(1, (kRotateBytes + wbytes - 1) / wbytes);
  for (size_t i = 0; i < copies; ++i) {
    void* p;
    CK(gpuMalloc(&p, wbytes));
    CK(gpuMemsetAsync(p, 0x3c, wbytes, s));  // small non-zero bf16 values
    st.w.push_back(p);
  }
  return st;
}

// with_weights plus x (filled), o and kWorkspace bytes of workspace; free_operands releases all.
Setup with_operands(int M, int N, int K, gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1) {
  Setup st = with_weights(M, N, K, s, e0, e1);
  CK(gpuMalloc(&st.x, size_t(M) * K * 2));
  CK(gpuMalloc(&st.o, size_t(M) * N * 2));
  CK(gpuMalloc(&st.ws, kWorkspace));
  CK(gpuMemsetAsync(st.x, 0x3c, size_t(M) * K * 2, s));
  return st;
}

void free_operands(Setup& st) {
  for (void* p : st.w) CK(gpuFree(p));
  for (void* p : {st.x, st.o, st.ws}) CK(gpuFree(p));
}

// Residual add + RMSNorm over one row of N outputs per block (N a multiple of the block, at most
// 16 values per thread), the projection's output given as S partials of type P: res += sum_s
// part[s]; h = res * rms * w. A plain probe kernel, slower than the engine's (split_k_norm.cu):
// its GEMM-only times are the numbers to read.
template <class P>
__global__ void add_norm_partials(const P* part, int S, size_t part_stride, gpu_bf16* res, const gpu_bf16* w,
                                  gpu_bf16* h, int N) {
  const int row = blockIdx.x;
  float v[16];
  float ss = 0;
  const int per = N / blockDim.x;  // <= 16
  for (int i = 0; i < per; ++i) {
    const size_t c = size_t(row) * N + threadIdx.x + size_t(i) * blockDim.x;
    float a = gpu_bf16_to_f32(res[c]);
    for (int s2 = 0; s2 < S; ++s2) {
      if constexpr (sizeof(P) == 4) a += float(part[s2 * part_stride + c]);
      else a += gpu_bf16_to_f32(part[s2 * part_stride + c]);
    }
    const gpu_bf16 r = gpu_f32_to_bf16(a);
    res[c] = r;
    v[i] = gpu_bf16_to_f32(r);
    ss += v[i] * v[i];
  }
  __shared__ float red[32];
  for (int o = 16; o > 0; o >>= 1) ss += gpu_shfl_xor(ss, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = ss;
  __syncthreads();
  float tot = 0;
  for (int i = 0; i < int(blockDim.x / 32); ++i) tot += red[i];
  const float inv = rsqrtf(tot / N + 1e-6f);
  for (int i = 0; i < per; ++i) {
    const size_t c = size_t(row) * N + threadIdx.x + size_t(i) * blockDim.x;
    h[c] = gpu_f32_to_bf16(v[i] * inv * gpu_bf16_to_f32(w[threadIdx.x + i * blockDim.x]));
  }
}

// The Lt descriptors of the row-major out[M,N] = x[M,K] W[N,K]^T, i.e. the column-major
// D[N,M] = W^T' x: A = W (transa = T), B = x; bf16 in and out, f32 compute, kWorkspace allowed.
struct LtProblem {
  gpublasLtMatmulDesc_t desc;
  gpublasLtMatrixLayout_t la, lb, ld;
  gpublasLtMatmulPreference_t pref;
  LtProblem(int M, int N, int K) {
    BK(gpublasLtMatmulDescCreate(&desc, GPUBLAS_COMPUTE_32F, GPU_R_32F));
    const int32_t ta = GPUBLAS_OP_T, tb = GPUBLAS_OP_N;
    BK(gpublasLtMatmulDescSetAttribute(desc, GPUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    BK(gpublasLtMatmulDescSetAttribute(desc, GPUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    BK(gpublasLtMatrixLayoutCreate(&la, GPU_R_16BF, uint64_t(K), uint64_t(N), K));
    BK(gpublasLtMatrixLayoutCreate(&lb, GPU_R_16BF, uint64_t(K), uint64_t(M), K));
    BK(gpublasLtMatrixLayoutCreate(&ld, GPU_R_16BF, uint64_t(N), uint64_t(M), N));
    BK(gpublasLtMatmulPreferenceCreate(&pref));
    const uint64_t wsb = kWorkspace;
    BK(gpublasLtMatmulPreferenceSetAttribute(pref, GPUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
  }
  ~LtProblem() {
    (void)gpublasLtMatmulPreferenceDestroy(pref);
    (void)gpublasLtMatrixLayoutDestroy(ld);
    (void)gpublasLtMatrixLayoutDestroy(lb);
    (void)gpublasLtMatrixLayoutDestroy(la);
    (void)gpublasLtMatmulDescDestroy(desc);
  }
  LtProblem(const LtProblem&) = delete;
  LtProblem& operator=(const LtProblem&) = delete;
};

// GEMM_PROBE_MODE=split: out[M, N] = x[M, K] W[N, K]^T then the residual add + norm (see the top).
void probe_split(gpublasHandle_t h, int M, int N, int K, gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1) {
  Setup st = with_weights(M, N, K, s, e0, e1);
  void *res, *nw, *hb, *part;
  CK(gpuMalloc(&st.x, size_t(M) * K * 2));
  CK(gpuMalloc(&st.o, size_t(M) * N * 2));
  CK(gpuMalloc(&res, size_t(M) * N * 2));
  CK(gpuMalloc(&hb, size_t(M) * N * 2));
  CK(gpuMalloc(&nw, size_t(N) * 2));
  CK(gpuMalloc(&part, size_t(8) * M * N * 4));
  CK(gpuMemsetAsync(st.x, 0x3c, size_t(M) * K * 2, s));
  CK(gpuMemsetAsync(res, 0, size_t(M) * N * 2, s));
  CK(gpuMemsetAsync(nw, 0x3c, size_t(N) * 2, s));
  const float alpha = 1.f, beta = 0.f;
  const int threads = N / 16 < 256 ? 256 : N / 16;
  const double base = time_us(st, [&](int i) {
    if (gpublasGemmEx(h, GPUBLAS_OP_T, GPUBLAS_OP_N, N, M, K, &alpha, st.w[size_t(i)], GPU_R_16BF, K, st.x,
                      GPU_R_16BF, K, &beta, st.o, GPU_R_16BF, N, GPUBLAS_COMPUTE_32F,
                      GPUBLAS_GEMM_DEFAULT) != GPUBLAS_STATUS_SUCCESS)
      return false;
    add_norm_partials<gpu_bf16><<<M, threads, 0, s>>>(static_cast<const gpu_bf16*>(st.o), 1, 0,
                                                       static_cast<gpu_bf16*>(res), static_cast<const gpu_bf16*>(nw),
                                                       static_cast<gpu_bf16*>(hb), N);
    return true;
  });
  const double gemm_only = time_us(st, [&](int i) {
    return gpublasGemmEx(h, GPUBLAS_OP_T, GPUBLAS_OP_N, N, M, K, &alpha, st.w[size_t(i)], GPU_R_16BF, K, st.x,
                         GPU_R_16BF, K, &beta, st.o, GPU_R_16BF, N, GPUBLAS_COMPUTE_32F,
                         GPUBLAS_GEMM_DEFAULT) == GPUBLAS_STATUS_SUCCESS;
  });
  std::printf("split_probe M=%d N=%d K=%d default GEMM %.1f us, + add-norm %.1f us\n", M, N, K, gemm_only, base);
  for (int S : {1, 2, 3, 4, 6, 8}) {
    if (K % (S * 64) != 0) continue;
    const int ks = K / S;
    auto gemm = [&](int i) {
      return gpublasGemmStridedBatchedEx(h, GPUBLAS_OP_T, GPUBLAS_OP_N, N, M, ks, &alpha, st.w[size_t(i)],
                                         GPU_R_16BF, K, ks, st.x, GPU_R_16BF, K, ks, &beta, part, GPU_R_32F, N,
                                         int64_t(M) * N, S, GPUBLAS_COMPUTE_32F,
                                         GPUBLAS_GEMM_DEFAULT) == GPUBLAS_STATUS_SUCCESS;
    };
    const double g = time_us(st, gemm);
    const double t = time_us(st, [&](int i) {
      if (!gemm(i)) return false;
      add_norm_partials<float><<<M, threads, 0, s>>>(static_cast<const float*>(part), S, size_t(M) * N,
                                                      static_cast<gpu_bf16*>(res), static_cast<const gpu_bf16*>(nw),
                                                      static_cast<gpu_bf16*>(hb), N);
      return true;
    });
    std::printf("split_probe M=%d N=%d K=%d S=%d f32 partials GEMM %.1f us, + add-norm %.1f us (default %.1f)\n",
                M, N, K, S, g, t, base);
  }
  for (void* p : st.w) CK(gpuFree(p));
  for (void* p : {st.x, st.o, res, hb, nw, part}) CK(gpuFree(p));
}

void probe(gpublasHandle_t h, gpublasLtHandle_t lt, int M, int N, int K, gpuStream_t s, gpuEvent_t e0,
           gpuEvent_t e1) {
  Setup st = with_operands(M, N, K, s, e0, e1);
  const float alpha = 1.f, beta = 0.f;

  const double t_default = time_us(st, [&](int i) {
    return gpublasGemmEx(h, GPUBLAS_OP_T, GPUBLAS_OP_N, N, M, K, &alpha, st.w[size_t(i)], GPU_R_16BF, K, st.x,
                         GPU_R_16BF, K, &beta, st.o, GPU_R_16BF, N, GPUBLAS_COMPUTE_32F,
                         GPUBLAS_GEMM_DEFAULT) == GPUBLAS_STATUS_SUCCESS;
  });

  const LtProblem lp(M, N, K);
  const gpublasLtMatmulDesc_t desc = lp.desc;
  const gpublasLtMatrixLayout_t la = lp.la, lb = lp.lb, ld = lp.ld;
  const gpublasLtMatmulPreference_t pref = lp.pref;
  std::vector<gpublasLtMatmulHeuristicResult_t> found(64);
  int n_found = 0;
  BK(gpublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, int(found.size()), found.data(), &n_found));
  found.resize(size_t(n_found));

  auto run_lt = [&](const gpublasLtMatmulAlgo_t& algo) {
    return [&, algo](int i) {
      return gpublasLtMatmul(lt, desc, &alpha, st.w[size_t(i)], la, st.x, lb, &beta, st.o, ld, st.o, ld, &algo, st.ws,
                             kWorkspace, s) == GPUBLAS_STATUS_SUCCESS;
    };
  };
  double t_heur = 1e30, t_best = 1e30;
  int heur_tile = -1, heur_split = -1, best_tile = -1, best_split = -1, tried = 0;
  for (const auto& r : found) {
    const double t = time_us(st, run_lt(r.algo));
    ++tried;
    if (t > 0 && t < t_heur) {
      t_heur = t;
      heur_tile = config(r.algo, GPUBLASLT_ALGO_CONFIG_TILE_ID);
      heur_split = config(r.algo, GPUBLASLT_ALGO_CONFIG_SPLITK_NUM);
    }
    for (int32_t split : {1, 2, 3, 4, 6, 8}) {
      gpublasLtMatmulAlgo_t a = r.algo;
      if (gpublasLtMatmulAlgoConfigSetAttribute(&a, GPUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof(split)) !=
          GPUBLAS_STATUS_SUCCESS)
        continue;
      gpublasLtMatmulHeuristicResult_t chk{};
      if (gpublasLtMatmulAlgoCheck(lt, desc, la, lb, ld, ld, &a, &chk) != GPUBLAS_STATUS_SUCCESS ||
          chk.workspaceSize > kWorkspace)
        continue;
      const double t2 = time_us(st, run_lt(a));
      ++tried;
      if (t2 > 0 && t2 < t_best) {
        t_best = t2;
        best_tile = config(a, GPUBLASLT_ALGO_CONFIG_TILE_ID);
        best_split = split;
      }
    }
  }
  t_best = std::min(t_best, t_heur);
  std::printf("gemm_search M=%d N=%d K=%d default %.1f us, heuristic best %.1f us (tile %d split %d, of %d), "
              "with split-K overrides %.1f us (tile %d split %d; %d configs timed); W %.1f MB, %.2f GFLOP\n",
              M, N, K, t_default, t_heur, heur_tile, heur_split, n_found, t_best, best_tile, best_split, tried,
              size_t(N) * K * 2 / 1e6, 2.0 * M * N * K / 1e9);
  free_operands(st);
}
// GEMM_PROBE_MODE=all: every configuration cuBLASLt accepts for the problem, not only the ones its
// heuristic offers: each of the heuristic's results and each algorithm id (AlgoGetIds, AlgoInit) x
// its tile and stage ids (AlgoCapGetAttribute) x cluster shape (its own, 1x1, 2x1, 1x2) x split-K 1
// or 2, AlgoCheck'd. Each is timed over 5 runs; the
// best 8 are timed again over kRuns. One line per shape: the heuristic's best and the best found.
void probe_all(gpublasLtHandle_t lt, int M, int N, int K, gpuStream_t s, gpuEvent_t e0, gpuEvent_t e1) {
  Setup st = with_operands(M, N, K, s, e0, e1);
  const float alpha = 1.f, beta = 0.f;
  const LtProblem lp(M, N, K);
  const gpublasLtMatmulDesc_t desc = lp.desc;
  const gpublasLtMatrixLayout_t la = lp.la, lb = lp.lb, ld = lp.ld;
  const gpublasLtMatmulPreference_t pref = lp.pref;
  auto timed = [&](const gpublasLtMatmulAlgo_t& algo, int runs) {
    return time_us(st, [&](int i) {
      return gpublasLtMatmul(lt, desc, &alpha, st.w[size_t(i)], la, st.x, lb, &beta, st.o, ld, st.o, ld, &algo, st.ws,
                             kWorkspace, s) == GPUBLAS_STATUS_SUCCESS;
    }, runs);
  };
  // The heuristic's best, as the tuner (matmul_lt_tuned.cpp) would find it among 16.
  std::vector<gpublasLtMatmulHeuristicResult_t> found(16);
  int n_found = 0;
  BK(gpublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, int(found.size()), found.data(), &n_found));
  double t_heur = 1e30;
  for (int i = 0; i < n_found; ++i) {
    const double t = timed(found[size_t(i)].algo, kRuns);
    if (t > 0) t_heur = std::min(t_heur, t);
  }
  // Starting points: the heuristic's algorithms (their inner shapes and custom options are valid)
  // and each algorithm id as AlgoInit makes it.
  std::vector<gpublasLtMatmulAlgo_t> bases;
  for (int i = 0; i < n_found; ++i) bases.push_back(found[size_t(i)].algo);
  std::vector<int> ids(256);
  int n_ids = 0;
  BK(gpublasLtMatmulAlgoGetIds(lt, GPUBLAS_COMPUTE_32F, GPU_R_32F, GPU_R_16BF, GPU_R_16BF, GPU_R_16BF, GPU_R_16BF,
                               int(ids.size()), ids.data(), &n_ids));
  for (int k = 0; k < n_ids; ++k) {
    gpublasLtMatmulAlgo_t a;
    if (gpublasLtMatmulAlgoInit(lt, GPUBLAS_COMPUTE_32F, GPU_R_32F, GPU_R_16BF, GPU_R_16BF, GPU_R_16BF, GPU_R_16BF,
                                ids[size_t(k)], &a) == GPUBLAS_STATUS_SUCCESS)
      bases.push_back(a);
  }
  struct Cand { double t; gpublasLtMatmulAlgo_t a; int id, tile, stages, cluster, split; };
  std::vector<Cand> cands;
  int checked = 0, set_failed = 0, check_failed = 0;
  for (size_t k = 0; k < bases.size(); ++k) {
    const gpublasLtMatmulAlgo_t& base = bases[k];
    if (k < size_t(n_found))
      std::printf("  heuristic %zu: algo %d tile %d stages %d cluster %d split %d\n", k,
                  config(base, GPUBLASLT_ALGO_CONFIG_ID), config(base, GPUBLASLT_ALGO_CONFIG_TILE_ID),
                  config(base, GPUBLASLT_ALGO_CONFIG_STAGES_ID), config(base, GPUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID),
                  config(base, GPUBLASLT_ALGO_CONFIG_SPLITK_NUM));
    auto cap_ids = [&](auto attr, int32_t own) {
      std::vector<int32_t> v(256);
      size_t n = 0;
      if (gpublasLtMatmulAlgoCapGetAttribute(&base, attr, v.data(), v.size() * sizeof(int32_t), &n) !=
              GPUBLAS_STATUS_SUCCESS || n == 0)
        return std::vector<int32_t>{own};
      v.resize(std::min(v.size(), n / sizeof(int32_t)));
      return v;
    };
    const std::vector<int32_t> tiles = cap_ids(GPUBLASLT_ALGO_CAP_TILE_IDS, config(base, GPUBLASLT_ALGO_CONFIG_TILE_ID));
    const std::vector<int32_t> stages =
        cap_ids(GPUBLASLT_ALGO_CAP_STAGES_IDS, config(base, GPUBLASLT_ALGO_CONFIG_STAGES_ID));
    const int32_t own_cluster = config(base, GPUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
    std::vector<int32_t> clusters{own_cluster};  // -1: the algorithm has no cluster attribute
    if (own_cluster >= 0)
      for (int32_t c : {2, 3, 5})  // 1x1, 2x1, 1x2
        if (c != own_cluster) clusters.push_back(c);
    int32_t splitk_ok = 0;
    size_t n = 0;
    (void)gpublasLtMatmulAlgoCapGetAttribute(&base, GPUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splitk_ok, sizeof(splitk_ok), &n);
    for (int32_t tile : tiles)
      for (int32_t stage : stages)
        for (int32_t cluster : clusters)
          for (int32_t split : {1, 2}) {
            if (split > 1 && !splitk_ok) continue;
            gpublasLtMatmulAlgo_t a = base;
            auto set = [&](auto attr, int32_t v) {
              return v < 0 || gpublasLtMatmulAlgoConfigSetAttribute(&a, attr, &v, sizeof(v)) == GPUBLAS_STATUS_SUCCESS;
            };
            if (!set(GPUBLASLT_ALGO_CONFIG_TILE_ID, tile) || !set(GPUBLASLT_ALGO_CONFIG_STAGES_ID, stage) ||
                !set(GPUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster) || !set(GPUBLASLT_ALGO_CONFIG_SPLITK_NUM, split)) {
              ++set_failed;
              continue;
            }
            gpublasLtMatmulHeuristicResult_t chk{};
            if (gpublasLtMatmulAlgoCheck(lt, desc, la, lb, ld, ld, &a, &chk) != GPUBLAS_STATUS_SUCCESS ||
                chk.workspaceSize > kWorkspace) {
              ++check_failed;
              continue;
            }
            ++checked;
            const double t = timed(a, 5);
            if (t > 0) cands.push_back({t, a, config(a, GPUBLASLT_ALGO_CONFIG_ID), tile, stage, cluster, split});
          }
  }
  std::sort(cands.begin(), cands.end(), [](const Cand& x, const Cand& y) { return x.t < y.t; });
  Cand best{1e30, {}, -1, -1, -1, -1, -1};
  for (size_t i = 0; i < std::min<size_t>(8, cands.size()); ++i) {
    const double t = timed(cands[i].a, kRuns);
    if (t > 0 && t < best.t) { best = cands[i]; best.t = t; }
  }
  std::printf("gemm_all M=%d N=%d K=%d heuristic best %.1f us (of %d), all configurations best %.1f us "
              "(algo %d tile %d stages %d cluster %d split %d; %d valid, %d rejected by AlgoCheck, %d not settable; %zu bases)\n",
              M, N, K, t_heur, n_found, best.t, best.id, best.tile, best.stages, best.cluster, best.split, checked,
              check_failed, set_failed, bases.size());
  std::fflush(stdout);
  free_operands(st);
}
}  // namespace

int main() {
  gpuStream_t s;
  CK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  gpuEvent_t e0, e1;
  CK(gpuEventCreate(&e0));
  CK(gpuEventCreate(&e1));
  gpublasHandle_t h;
  BK(gpublasCreate(&h));
  BK(gpublasSetStream(h, s));
  gpublasLtHandle_t lt;
  BK(gpublasLtCreate(&lt));
  if (const char* m = std::getenv("GEMM_PROBE_MODE"); m && std::string(m) == "split") {
    // Qwen3-8B o_proj, down, and qkv (N = 6144: its partials would go to the q/k preparation).
    const int shapes[3][2] = {{4096, 4096}, {4096, 12288}, {6144, 4096}};
    for (int M : {16, 32, 64, 96, 128, 160, 192, 224, 256})
      for (const auto& nk : shapes) probe_split(h, M, nk[0], nk[1], s, e0, e1);
    return 0;
  }
  // Qwen3-8B: qkv, o_proj, gate|up, down.
  const int shapes[4][2] = {{6144, 4096}, {4096, 4096}, {24576, 4096}, {4096, 12288}};
  if (const char* m = std::getenv("GEMM_PROBE_MODE"); m && std::string(m) == "all") {
    for (int M : {128, 192, 256})
      for (auto& sh : shapes) probe_all(lt, M, sh[0], sh[1], s, e0, e1);
    return 0;
  }
  for (int M : {64, 128, 192, 256})
    for (auto& sh : shapes) probe(h, lt, M, sh[0], sh[1], s, e0, e1);
  return 0;
}
