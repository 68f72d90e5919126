// Can a cuBLAS GEMM captured in a graph start while the kernel before it drains (a programmatic
// edge, as programmatic dependent launch gives our own kernels)? That is only correct if the
// library's kernels wait for their predecessor (griddepcontrol.wait) before reading their inputs;
// cuBLAS documents no such thing, so this probe asks the kernels themselves, then times the gain.
//
// race: for Qwen3-8B's four projections at several M, cublasGemmEx's default and every algorithm
// the Lt heuristic returns run in a graph [memset A to NaN] -> [producer] -> GEMM, the GEMM's edge
// made programmatic (cudaStreamUpdateCaptureDependencies before the library call). The producer
// lets its successor launch at once (griddepcontrol.launch_dependents), waits 50 us, then writes
// A. A GEMM that waits reads the written A: its output equals the ordinary graph's, bit for bit.
// One that does not reads NaNs. One line per (shape, algorithm): "waits" or "RACE".
//
// chain: 8 layers of [small kernel -> qkv GEMM -> small -> o GEMM -> small -> gate_up -> small ->
// down] (the small kernels launched programmatically, as the engine's are), graphs with ordinary
// and with programmatic edges into the GEMMs, replayed alternately; us per layer for each.
// CUDA-only by nature (it asks about cuBLAS); not part of the build.
// Build: nvcc -O2 -std=c++17 -arch=sm_90 scripts/blas_pdl_probe.cu -lcublas -lcublasLt -o blas_pdl_probe
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("FAILED %s: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)
#define BK(x) do { if ((x) != CUBLAS_STATUS_SUCCESS) { std::printf("FAILED %s\n", #x); std::exit(1); } } while (0)

namespace {
constexpr size_t kWorkspace = size_t(32) << 20;

__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// Lets its successor launch at once, then waits wait_ns and copies src to dst.
__global__ void producer(const __nv_bfloat16* src, __nv_bfloat16* dst, size_t n, uint64_t wait_ns) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const uint64_t t0 = now_ns();
  while (now_ns() - t0 < wait_ns) {}
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

// The chain's small kernel, as the engine's: waits for its predecessor, lets its successor go,
// then y[r, c] = x[r, c] * s for c < cols (x's rows ldx apart).
__global__ void small_kernel(const __nv_bfloat16* x, int ldx, __nv_bfloat16* y, int cols, float s) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int r = blockIdx.x;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    y[size_t(r) * cols + c] = __float2bfloat16(__bfloat162float(x[size_t(r) * ldx + c]) * s);
}

void launch_small(cudaStream_t s, const __nv_bfloat16* x, int ldx, __nv_bfloat16* y, int rows, int cols) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(rows);
  cfg.blockDim = dim3(256);
  cfg.stream = s;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, small_kernel, x, ldx, y, cols, 0.5f));
}

// While s captures: the next captured node's edge from the current one becomes programmatic (if
// that one is a kernel node).
bool make_next_edge_programmatic(cudaStream_t s) {
  cudaStreamCaptureStatus status;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  CK(cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, nullptr, &n));
  if (status != cudaStreamCaptureStatusActive || n != 1) return false;
  cudaGraphNodeType type;
  CK(cudaGraphNodeGetType(deps[0], &type));
  if (type != cudaGraphNodeTypeKernel) return false;
  cudaGraphNode_t dep = deps[0];
  cudaGraphEdgeData e{};
  e.from_port = cudaGraphKernelNodePortProgrammatic;
  e.type = cudaGraphDependencyTypeProgrammatic;
  CK(cudaStreamUpdateCaptureDependencies(s, &dep, &e, 1, cudaStreamSetCaptureDependencies));
  return true;
}

struct Gemm {  // row-major out[M, N] = x[M, K] W[N, K]^T: candidate 0 is cublasGemmEx, i > 0 Lt's found[i - 1]
  int M, N, K;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> found;
};

Gemm make_gemm(cublasLtHandle_t lt, int M, int N, int K, int max_algos) {
  Gemm g{M, N, K};
  BK(cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  BK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  BK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  BK(cublasLtMatrixLayoutCreate(&g.la, CUDA_R_16BF, uint64_t(K), uint64_t(N), K));
  BK(cublasLtMatrixLayoutCreate(&g.lb, CUDA_R_16BF, uint64_t(K), uint64_t(M), K));
  BK(cublasLtMatrixLayoutCreate(&g.ld, CUDA_R_16BF, uint64_t(N), uint64_t(M), N));
  cublasLtMatmulPreference_t pref;
  BK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t wsb = kWorkspace;
  BK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
  g.found.resize(size_t(max_algos));
  int n = 0;
  if (max_algos > 0)
    BK(cublasLtMatmulAlgoGetHeuristic(lt, g.desc, g.la, g.lb, g.ld, g.ld, pref, max_algos, g.found.data(), &n));
  g.found.resize(size_t(n));
  BK(cublasLtMatmulPreferenceDestroy(pref));
  return g;
}

bool run_gemm(cublasHandle_t h, cublasLtHandle_t lt, const Gemm& g, int cand, const void* w, const void* x, void* out,
              void* ws, cudaStream_t s) {
  const float alpha = 1.f, beta = 0.f;
  if (cand == 0)
    return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, g.N, g.M, g.K, &alpha, w, CUDA_R_16BF, g.K, x, CUDA_R_16BF, g.K,
                        &beta, out, CUDA_R_16BF, g.N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) ==
           CUBLAS_STATUS_SUCCESS;
  return cublasLtMatmul(lt, g.desc, &alpha, w, g.la, x, g.lb, &beta, out, g.ld, out, g.ld,
                        &g.found[size_t(cand - 1)].algo, ws, kWorkspace, s) == CUBLAS_STATUS_SUCCESS;
}

__global__ void fill(__nv_bfloat16* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t v = uint32_t(i) * 2654435761u ^ seed;
    v ^= v >> 13;
    v *= 0x5bd1e995u;
    p[i] = __float2bfloat16((float(v >> 8) / float(1u << 24) - 0.5f) * 0.25f);
  }
}

void race(cublasHandle_t h, cublasLtHandle_t lt, cudaStream_t s, void* ws) {
  struct Shape { const char* name; int N, K; };
  const Shape shapes[] = {{"qkv", 6144, 4096}, {"o_proj", 4096, 4096}, {"gate_up", 24576, 4096}, {"down", 4096, 12288}};
  int waits = 0, races = 0, skipped = 0;
  for (const Shape& sh : shapes) {
    __nv_bfloat16 *w, *src, *a, *out;
    const int maxM = 256;
    CK(cudaMalloc(&w, size_t(sh.N) * sh.K * 2));
    CK(cudaMalloc(&src, size_t(maxM) * sh.K * 2));
    CK(cudaMalloc(&a, size_t(maxM) * sh.K * 2));
    CK(cudaMalloc(&out, size_t(maxM) * sh.N * 2));
    fill<<<1024, 256, 0, s>>>(w, size_t(sh.N) * sh.K, 1);
    fill<<<1024, 256, 0, s>>>(src, size_t(maxM) * sh.K, 2);
    std::vector<uint16_t> ref(size_t(maxM) * sh.N), got(ref.size());
    for (int M : {1, 8, 64, 128, 192, 256}) {
      const Gemm g = make_gemm(lt, M, sh.N, sh.K, 8);
      for (int cand = 0; cand <= int(g.found.size()); ++cand) {
        const size_t abytes = size_t(M) * sh.K * 2, obytes = size_t(M) * sh.N * 2;
        auto capture = [&](bool programmatic, cudaGraphExec_t* exec) {
          cudaGraph_t graph;
          CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
          CK(cudaMemsetAsync(a, 0xff, abytes, s));  // NaN
          CK(cudaMemsetAsync(out, 0, obytes, s));
          producer<<<132, 256, 0, s>>>(src, a, size_t(M) * sh.K, 50000);
          if (programmatic) make_next_edge_programmatic(s);
          const bool ok = run_gemm(h, lt, g, cand, w, a, out, ws, s);
          cudaError_t e = cudaStreamEndCapture(s, &graph);
          if (!ok || e != cudaSuccess) {
            (void)cudaGetLastError();
            return false;
          }
          e = cudaGraphInstantiate(exec, graph, 0);
          CK(cudaGraphDestroy(graph));
          if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return false;
          }
          return true;
        };
        cudaGraphExec_t plain, prog;
        if (!capture(false, &plain)) { ++skipped; continue; }
        CK(cudaGraphLaunch(plain, s));
        CK(cudaMemcpyAsync(ref.data(), out, obytes, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        if (!capture(true, &prog)) {
          std::printf("race %s M=%d cand=%d: programmatic capture failed\n", sh.name, M, cand);
          CK(cudaGraphExecDestroy(plain));
          ++skipped;
          continue;
        }
        bool same = true;
        for (int rep = 0; rep < 3 && same; ++rep) {
          CK(cudaGraphLaunch(prog, s));
          CK(cudaMemcpyAsync(got.data(), out, obytes, cudaMemcpyDeviceToHost, s));
          CK(cudaStreamSynchronize(s));
          same = std::memcmp(got.data(), ref.data(), obytes) == 0;
        }
        int nan = 0;
        for (size_t i = 0; i < size_t(M) * sh.N; ++i) nan += (got[i] & 0x7f80) == 0x7f80 && (got[i] & 0x7f);
        int tile = -1;
        if (cand > 0) {
          size_t sz = 0;
          (void)cublasLtMatmulAlgoConfigGetAttribute(&g.found[size_t(cand - 1)].algo, CUBLASLT_ALGO_CONFIG_TILE_ID,
                                                     &tile, sizeof(tile), &sz);
        }
        std::printf("race %-7s M=%-3d %s%-2d tile=%-3d %s (NaN outputs %d)\n", sh.name, M, cand ? "lt#" : "gemmex ",
                    cand ? cand - 1 : 0, tile, same ? "waits" : "RACE", nan);
        (same ? waits : races)++;
        CK(cudaGraphExecDestroy(plain));
        CK(cudaGraphExecDestroy(prog));
      }
    }
    CK(cudaFree(w));
    CK(cudaFree(src));
    CK(cudaFree(a));
    CK(cudaFree(out));
  }
  std::printf("race summary: %d wait, %d RACE, %d not capturable\n", waits, races, skipped);
}

void chain(cublasHandle_t h, cublasLtHandle_t lt, cudaStream_t s, void* ws) {
  constexpr int kLayers = 8, H = 4096, I = 12288, QKV = 6144;
  std::vector<__nv_bfloat16*> wq(kLayers), wo(kLayers), wgu(kLayers), wd(kLayers);
  for (int l = 0; l < kLayers; ++l) {
    CK(cudaMalloc(&wq[l], size_t(QKV) * H * 2));
    CK(cudaMalloc(&wo[l], size_t(H) * H * 2));
    CK(cudaMalloc(&wgu[l], size_t(2 * I) * H * 2));
    CK(cudaMalloc(&wd[l], size_t(H) * I * 2));
    fill<<<1024, 256, 0, s>>>(wq[l], size_t(QKV) * H, 10 + l);
    fill<<<1024, 256, 0, s>>>(wo[l], size_t(H) * H, 20 + l);
    fill<<<1024, 256, 0, s>>>(wgu[l], size_t(2 * I) * H, 30 + l);
    fill<<<1024, 256, 0, s>>>(wd[l], size_t(H) * I, 40 + l);
  }
  __nv_bfloat16 *x, *y_qkv, *x_o, *y_o, *x_gu, *y_gu, *x_d, *y_d;
  const int maxM = 256;
  for (auto** p : {&x, &x_o, &y_o, &x_gu, &y_d}) CK(cudaMalloc(p, size_t(maxM) * H * 2));
  CK(cudaMalloc(&y_qkv, size_t(maxM) * QKV * 2));
  CK(cudaMalloc(&y_gu, size_t(maxM) * 2 * I * 2));
  CK(cudaMalloc(&x_d, size_t(maxM) * I * 2));
  fill<<<1024, 256, 0, s>>>(x, size_t(maxM) * H, 3);
  for (int M : {8, 64, 128, 192, 256}) {
    const Gemm gq = make_gemm(lt, M, QKV, H, 0), go = make_gemm(lt, M, H, H, 0), ggu = make_gemm(lt, M, 2 * I, H, 0),
               gd = make_gemm(lt, M, H, I, 0);
    auto capture = [&](bool programmatic) {
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
      auto gemm = [&](const Gemm& g, const void* w, const void* in, void* out) {
        if (programmatic) make_next_edge_programmatic(s);
        if (!run_gemm(h, lt, g, 0, w, in, out, ws, s)) { std::printf("chain GEMM failed\n"); std::exit(1); }
      };
      for (int l = 0; l < kLayers; ++l) {
        launch_small(s, y_d, H, x, M, H);  // "norm"
        gemm(gq, wq[l], x, y_qkv);
        launch_small(s, y_qkv, QKV, x_o, M, H);  // "attention"
        gemm(go, wo[l], x_o, y_o);
        launch_small(s, y_o, H, x_gu, M, H);  // "norm"
        gemm(ggu, wgu[l], x_gu, y_gu);
        launch_small(s, y_gu, 2 * I, x_d, M, I);  // "SiLU-mul"
        gemm(gd, wd[l], x_d, y_d);
      }
      CK(cudaStreamEndCapture(s, &graph));
      CK(cudaGraphInstantiate(&exec, graph, 0));
      CK(cudaGraphDestroy(graph));
      return exec;
    };
    cudaGraphExec_t plain = capture(false), prog = capture(true);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    double t[2] = {0, 0};
    constexpr int kRounds = 10;
    for (int r = 0; r < kRounds + 1; ++r)
      for (int v = 0; v < 2; ++v) {
        CK(cudaEventRecord(e0, s));
        CK(cudaGraphLaunch(v ? prog : plain, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0) t[v] += ms;
      }
    const double per_layer[2] = {t[0] * 1e3 / kRounds / kLayers, t[1] * 1e3 / kRounds / kLayers};
    std::printf("chain M=%-3d us per layer: ordinary edges %.1f, programmatic into the GEMMs %.1f (%.2f us per GEMM)\n",
                M, per_layer[0], per_layer[1], (per_layer[0] - per_layer[1]) / 4);
    CK(cudaGraphExecDestroy(plain));
    CK(cudaGraphExecDestroy(prog));
  }
}
}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "all";
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t h;
  cublasLtHandle_t lt;
  BK(cublasCreate(&h));
  BK(cublasSetStream(h, s));
  BK(cublasLtCreate(&lt));
  void* ws;
  CK(cudaMalloc(&ws, kWorkspace));
  BK(cublasSetWorkspace(h, ws, kWorkspace));
  std::printf("cuBLAS %d\n", cublasLtGetVersion());
  if (!std::strcmp(mode, "all") || !std::strcmp(mode, "race")) race(h, lt, s, ws);
  if (!std::strcmp(mode, "all") || !std::strcmp(mode, "chain")) chain(h, lt, s, ws);
  return 0;
}
