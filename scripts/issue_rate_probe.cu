// Issue-rate probe (NVIDIA, inline PTX): results per clock per SM of the instructions the fp8
// decode attention's tile loop is made of, to tell which pipe a loop of them can saturate. Each of
// 32 warps per SM runs 8 independent chains of one instruction, so the rate is the pipe's
// throughput, not its latency; cycles come from clock64() around the loop, per block.
//   ffma  FFMA (the reference: 128 per clock per SM on sm_80/sm_90)
//   cvt   cvt.rn.f16x2.e4m3x2 (F2FP.F16.E4M3.UNPACK_B: two e4m3 values to f16, sm_89+)
//   prmt  PRMT (byte permute), lop3  LOP3 (three-input logic), ex2  MUFU.EX2 (ex2.approx.ftz)
//   hmma  mma.sync m16n8k16 f16 x f16 -> f32 (counted in MMAs, not FLOPs)
// Prints "<name> <results per clock per SM>" per line. Build and run (sm_90):
//   nvcc -O3 -std=c++17 -arch=sm_90 scripts/issue_rate_probe.cu -o issue_rate_probe && ./issue_rate_probe
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "cuda_check.h"

constexpr int kThreads = 1024, kChains = 8, kIters = 4096;

enum Op { FFMA, CVT, PRMT, LOP3, EX2, HMMA };

template <Op op>
__device__ __forceinline__ void step(uint32_t (&r)[kChains], uint32_t c) {
#pragma unroll
  for (int j = 0; j < kChains; ++j) {
    if constexpr (op == FFMA) {
      asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+r"(r[j]) : "r"(c));
    } else if constexpr (op == CVT) {
      asm volatile("{.reg .b16 lo, hi; mov.b32 {lo, hi}, %0; cvt.rn.f16x2.e4m3x2 %0, lo;}" : "+r"(r[j]));
    } else if constexpr (op == PRMT) {
      asm volatile("prmt.b32 %0, %0, %1, 0x5140;" : "+r"(r[j]) : "r"(c));
    } else if constexpr (op == LOP3) {
      asm volatile("lop3.b32 %0, %0, %1, %1, 0xE8;" : "+r"(r[j]) : "r"(c));
    } else if constexpr (op == EX2) {
      asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+r"(r[j]));
    }
  }
}

// 8 independent m16n8k16 accumulations per warp (8 x 4 f32 accumulators, A and B fixed).
__device__ __forceinline__ void hmma_step(float (&acc)[kChains][4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#pragma unroll
  for (int j = 0; j < kChains; ++j)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <Op op>
__global__ void __launch_bounds__(kThreads) probe(uint32_t seed, uint32_t* sink, long long* cycles) {
  uint32_t r[kChains];
  float acc[kChains][4] = {};
  const uint32_t a[4] = {seed, seed + 1, seed + 2, seed + 3}, b[2] = {seed ^ 5u, seed ^ 9u};
#pragma unroll
  for (int j = 0; j < kChains; ++j) r[j] = seed + threadIdx.x * 7u + j;
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < kIters; ++i) {
    if constexpr (op == HMMA) hmma_step(acc, a, b);
    else step<op>(r, seed);
  }
  __syncthreads();
  const long long t1 = clock64();
  uint32_t x = 0;
#pragma unroll
  for (int j = 0; j < kChains; ++j) x ^= r[j] ^ __float_as_uint(acc[j][0] + acc[j][3]);
  if (x == 0x12345678u) sink[threadIdx.x] = x;  // keeps the work; practically never taken
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <Op op>
void run(const char* name, int sms, uint32_t* sink, long long* cycles) {
  probe<op><<<sms, kThreads>>>(1u, sink, cycles);  // warm-up (code, clocks)
  probe<op><<<sms, kThreads>>>(3u, sink, cycles);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  long long* c = new long long[sms];
  CK(cudaMemcpy(c, cycles, sizeof(long long) * sms, cudaMemcpyDeviceToHost));
  double mean = 0;
  for (int i = 0; i < sms; ++i) mean += double(c[i]) / sms;
  delete[] c;
  // HMMA counts warp-level MMAs; the others per-thread results.
  const double per_block = op == HMMA ? double(kThreads / 32) * kIters * kChains : double(kThreads) * kIters * kChains;
  std::printf("%s %.1f\n", name, per_block / mean);
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint32_t* sink = nullptr;
  long long* cycles = nullptr;
  CK(cudaMalloc(&sink, kThreads * sizeof(uint32_t)));
  CK(cudaMalloc(&cycles, sms * sizeof(long long)));
  run<FFMA>("ffma", sms, sink, cycles);
  run<CVT>("cvt_e4m3x2_f16x2", sms, sink, cycles);
  run<PRMT>("prmt", sms, sink, cycles);
  run<LOP3>("lop3", sms, sink, cycles);
  run<EX2>("ex2_approx_ftz", sms, sink, cycles);
  run<HMMA>("hmma_m16n8k16_f32_per_warp_mma", sms, sink, cycles);
  return 0;
}
