// Machine probe for scripts/gpu-check.sh: device-to-device copy bandwidth (bytes read + written),
// the bf16 GEMM rate of the vendor BLAS (f32 accumulate) and the e4m3 GEMM rate of its Lt API
// (tensor-wide scales: the FP8 peak; 1x128 x 128x128 block scales: what MATMUL_FP8_BLOCK's W8A8
// path can reach), the rooflines the decode and prefill benchmarks are compared with. Uses only the
// neutral names of the GPU vendor layer.
// Build: nvcc -O2 -std=c++17 -I src -arch=sm_90 scripts/gpu_probe.cu -lcublas -lcublasLt -o gpu_probe
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "backends/gpu/vendor/vendor.h"

#define CK(x) do { if ((x) != gpuSuccess) { std::printf("FAILED %s\n", #x); std::exit(1); } } while (0)

// Times 10 e4m3 x e4m3 -> bf16 GEMMs out[M,N] = x[M,K] W[N,K]^T through the BLAS Lt API (TN, f32
// compute) and prints "<label> M= N= K= <TFLOP/s>", or "... FAILED <why>" (the other lines stand).
// block: W has 128x128 block scales and x 1x128 group scales (the Hopper block-scaled modes);
// otherwise no scale pointers are set, i.e. tensor-wide scales of 1 (the plain FP8 rate).
static void fp8_gemm_rate(const char* label, int M, int N, int K, bool block, gpuStream_t s, gpuEvent_t e0,
                          gpuEvent_t e1) {
  gpublasLtHandle_t lt = nullptr;
  gpublasLtMatmulDesc_t desc = nullptr;
  gpublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  gpublasLtMatmulPreference_t pref = nullptr;
  void *x = nullptr, *w = nullptr, *o = nullptr, *xs = nullptr, *ws = nullptr, *wsp = nullptr;
  const size_t ws_bytes = size_t(32) << 20;
  const int kb = K / 128, kb4 = (kb + 3) / 4 * 4;
  const char* failed = nullptr;
  gpublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  float ms = 0;
#define LT(x) do { if ((x) != GPUBLAS_STATUS_SUCCESS) { failed = #x; goto done; } } while (0)
  CK(gpuMalloc(&x, size_t(M) * K));
  CK(gpuMalloc(&w, size_t(N) * K));
  CK(gpuMalloc(&o, size_t(M) * N * 2));
  CK(gpuMalloc(&xs, size_t(M) * kb * 4 + 16));
  CK(gpuMalloc(&ws, size_t(kb4) * ((N + 127) / 128) * 4 + 16));
  CK(gpuMalloc(&wsp, ws_bytes));
  CK(gpuMemsetAsync(x, 0x38, size_t(M) * K, s));  // e4m3 1.0
  CK(gpuMemsetAsync(w, 0x38, size_t(N) * K, s));
  CK(gpuMemsetAsync(xs, 0x3c, size_t(M) * kb * 4 + 16, s));  // f32 ~0.0115: finite, non-zero scales
  CK(gpuMemsetAsync(ws, 0x3c, size_t(kb4) * ((N + 127) / 128) * 4 + 16, s));
  {
    LT(gpublasLtCreate(&lt));
    LT(gpublasLtMatmulDescCreate(&desc, GPUBLAS_COMPUTE_32F, GPU_R_32F));
    const int32_t ta = GPUBLAS_OP_T, tb = GPUBLAS_OP_N;
    LT(gpublasLtMatmulDescSetAttribute(desc, GPUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    LT(gpublasLtMatmulDescSetAttribute(desc, GPUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (block) {
      const int32_t ma = GPUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, mb = GPUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
      LT(gpublasLtMatmulDescSetAttribute(desc, GPUBLASLT_MATMUL_DESC_A_SCALE_MODE, &ma, sizeof(ma)));
      LT(gpublasLtMatmulDescSetAttribute(desc, GPUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mb, sizeof(mb)));
      LT(gpublasLtMatmulDescSetAttribute(desc, GPUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &ws, sizeof(ws)));
      LT(gpublasLtMatmulDescSetAttribute(desc, GPUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &xs, sizeof(xs)));
    }
    LT(gpublasLtMatrixLayoutCreate(&la, GPU_R_8F_E4M3, K, N, K));
    LT(gpublasLtMatrixLayoutCreate(&lb, GPU_R_8F_E4M3, K, M, K));
    LT(gpublasLtMatrixLayoutCreate(&ld, GPU_R_16BF, N, M, N));
    LT(gpublasLtMatmulPreferenceCreate(&pref));
    const uint64_t wsb = ws_bytes;
    LT(gpublasLtMatmulPreferenceSetAttribute(pref, GPUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
    LT(gpublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &r, &found));
    if (found == 0) { failed = "no algorithm"; goto done; }
    const float alpha = 1.f, beta = 0.f;
    for (int i = 0; i < 13; ++i) {
      if (i == 3) CK(gpuEventRecord(e0, s));
      LT(gpublasLtMatmul(lt, desc, &alpha, w, la, x, lb, &beta, o, ld, o, ld, &r.algo, wsp, ws_bytes, s));
    }
    CK(gpuEventRecord(e1, s));
    CK(gpuEventSynchronize(e1));
    CK(gpuEventElapsedTime(&ms, e0, e1));
  }
done:
#undef LT
  if (failed)
    std::printf("%s M=%d N=%d K=%d FAILED %s\n", label, M, N, K, failed);
  else
    std::printf("%s M=%d N=%d K=%d %.0f\n", label, M, N, K, 2.0 * M * N * K * 10 / (ms * 1e-3) / 1e12);
  if (pref) gpublasLtMatmulPreferenceDestroy(pref);
  if (ld) gpublasLtMatrixLayoutDestroy(ld);
  if (lb) gpublasLtMatrixLayoutDestroy(lb);
  if (la) gpublasLtMatrixLayoutDestroy(la);
  if (desc) gpublasLtMatmulDescDestroy(desc);
  if (lt) gpublasLtDestroy(lt);
  CK(gpuFree(x));
  CK(gpuFree(w));
  CK(gpuFree(o));
  CK(gpuFree(xs));
  CK(gpuFree(ws));
  CK(gpuFree(wsp));
}

int main() {
  gpuDeviceProp p{};
  CK(gpuGetDeviceProperties(&p, 0));
  std::printf("device %s sm_%d%d SMs=%d mem=%.1f GiB\n", p.name, p.major, p.minor, p.multiProcessorCount,
              p.totalGlobalMem / 1073741824.0);
  gpuStream_t s;
  CK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  gpuEvent_t e0, e1;
  CK(gpuEventCreate(&e0));
  CK(gpuEventCreate(&e1));
  float ms = 0;
  // Copy bandwidth: 2 GiB buffers, 3 warm-ups, 10 timed copies.
  const size_t bytes = size_t(2) << 30;
  void *a, *b;
  CK(gpuMalloc(&a, bytes));
  CK(gpuMalloc(&b, bytes));
  CK(gpuMemsetAsync(a, 1, bytes, s));
  for (int i = 0; i < 3; ++i) CK(gpuMemcpyAsync(b, a, bytes, gpuMemcpyDeviceToDevice, s));
  CK(gpuEventRecord(e0, s));
  for (int i = 0; i < 10; ++i) CK(gpuMemcpyAsync(b, a, bytes, gpuMemcpyDeviceToDevice, s));
  CK(gpuEventRecord(e1, s));
  CK(gpuEventSynchronize(e1));
  CK(gpuEventElapsedTime(&ms, e0, e1));
  const double bw = 2.0 * bytes * 10 / (ms * 1e-3) / 1e9;
  std::printf("copy_bandwidth_GBps %.0f\n", bw);
  CK(gpuFree(a));
  CK(gpuFree(b));
  // bf16 GEMM rate at 8192^3 and at a 4096-token prefill-like shape (Qwen3-8B gate|up: N=24576, K=4096).
  gpublasHandle_t h;
  if (gpublasCreate(&h) != GPUBLAS_STATUS_SUCCESS) { std::printf("FAILED blas create\n"); return 1; }
  gpublasSetStream(h, s);
  const int shapes[2][3] = {{8192, 8192, 8192}, {4096, 24576, 4096}};
  for (auto& sh : shapes) {
    const int M = sh[0], N = sh[1], K = sh[2];
    void *x, *w, *o;
    CK(gpuMalloc(&x, size_t(M) * K * 2));
    CK(gpuMalloc(&w, size_t(N) * K * 2));
    CK(gpuMalloc(&o, size_t(M) * N * 2));
    CK(gpuMemsetAsync(x, 0x3c, size_t(M) * K * 2, s));  // small non-zero bf16 values
    CK(gpuMemsetAsync(w, 0x3c, size_t(N) * K * 2, s));
    const float alpha = 1.f, beta = 0.f;
    auto run = [&] {
      return gpublasGemmEx(h, GPUBLAS_OP_T, GPUBLAS_OP_N, N, M, K, &alpha, w, GPU_R_16BF, K, x, GPU_R_16BF, K, &beta, o,
                           GPU_R_16BF, N, GPUBLAS_COMPUTE_32F, GPUBLAS_GEMM_DEFAULT);
    };
    for (int i = 0; i < 3; ++i) run();
    CK(gpuEventRecord(e0, s));
    for (int i = 0; i < 10; ++i) run();
    CK(gpuEventRecord(e1, s));
    CK(gpuEventSynchronize(e1));
    CK(gpuEventElapsedTime(&ms, e0, e1));
    std::printf("bf16_gemm_TFLOPs M=%d N=%d K=%d %.0f\n", M, N, K, 2.0 * M * N * K * 10 / (ms * 1e-3) / 1e12);
    CK(gpuFree(x));
    CK(gpuFree(w));
    CK(gpuFree(o));
  }
  // e4m3 GEMM rates (cuBLASLt): the FP8 peak at 8192^3, and the block-scaled W8A8 form at 8192^3 and
  // at a DeepSeek-V3 prefill shape (4096 tokens, N=18432, K=7168).
  fp8_gemm_rate("fp8_gemm_TFLOPs", 8192, 8192, 8192, false, s, e0, e1);
  fp8_gemm_rate("fp8_block_gemm_TFLOPs", 8192, 8192, 8192, true, s, e0, e1);
  fp8_gemm_rate("fp8_block_gemm_TFLOPs", 4096, 18432, 7168, true, s, e0, e1);
  return 0;
}
