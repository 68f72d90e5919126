// Machine probe for scripts/gpu-check.sh: device-to-device copy bandwidth (bytes read + written)
// and the bf16 GEMM rate of the vendor BLAS (f32 accumulate), the two rooflines the decode and
// prefill benchmarks are compared with. Uses only the neutral names of the GPU vendor layer.
// Build: nvcc -O2 -std=c++17 -I src -arch=sm_90 scripts/gpu_probe.cu -lcublas -o gpu_probe
#include <cstdio>
#include <cstdlib>

#include "backends/gpu/vendor/vendor.h"

#define CK(x) do { if ((x) != gpuSuccess) { std::printf("FAILED %s\n", #x); std::exit(1); } } while (0)

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
  return 0;
}
