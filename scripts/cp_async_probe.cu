// cp.async copy-pattern probe (NVIDIA, inline PTX): how fast 16-byte cp.async copies of KV-cache
// tiles stream, by global layout and shared-memory placement. The fp8 decode attention copies a
// 16-key tile of one KV head (16 rows of 128 bytes) per warp, 4 rows (32 lanes x 16 bytes) per
// instruction; ncu counted twice the ideal L2 sectors and 4x the ideal shared wavefronts for
// those copies, which this probe showed are not the rows' placement: the kernel's dynamic shared
// memory started 16 bytes past a 32-byte boundary (BENCHMARKS.md, twenty-fifth session). Each
// variant reads the same 1 GiB once:
//   nhd  token-major cache ([page, token, head, dim]): a tile's rows are 1 KB apart
//   hnd  head-major pages ([page, head, token, dim]): a tile is 2 KB contiguous
// and places lane (row r = lane / 8, chunk c = lane % 8) in shared memory at
//   id    row r * 128, chunk c                      (rows as copied)
//   swz   chunk c ^ (r & 1) ^ ((r >> 2 & 3) << 1)   (the attention's fp8_chunk)
//   even  chunk c ^ ((r >> 2 & 3) << 1)             (32-byte units permuted, sectors kept whole)
//   odd   chunk c ^ (r & 1)                         (the halves of each 32-byte sector swapped)
//   pad   row r * 144, chunk c                      (padded rows)
//   off16 as id, 16 bytes past a 32-byte boundary   (the attention kernel's start before the fix)
//   ca    as id, with cp.async.ca (L1-allocating) instead of .cg
// 3 blocks of 4 warps per SM, each warp a ring of 3 tiles, as in the attention kernel.
// H200 (twenty-fifth session, before off16 existed): every variant 4366-4413 GB/s except pad
// 4065 and ca 4112; ncu: ideal sectors (16) and shared wavefronts (4) per copy, except pad (24, 10).
// Prints "<variant> <GB/s>" per line. `cp_async_probe once` runs each variant once on 64 MiB (for
// ncu: `ncu --section SourceCounters -k regex:copy_kernel ./cp_async_probe once`).
//   nvcc -O3 -std=c++17 -arch=sm_90 scripts/cp_async_probe.cu -o cp_async_probe && ./cp_async_probe
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "cuda_check.h"

enum Layout { NHD, HND };
enum Place { ID, SWZ, EVEN, ODD, PAD, CA, OFF16 };

constexpr int kWarps = 4, kStages = 3, kRows = 16, kRowBytes = 128, kHeads = 8;
constexpr int kTileBytes = kRows * kRowBytes, kPageBytes = kTileBytes * kHeads;

template <Place pl> __device__ __forceinline__ int smem_offset(int r, int c) {
  if constexpr (pl == SWZ) return r * 128 + (c ^ (r & 1) ^ (((r >> 2) & 3) << 1)) * 16;
  if constexpr (pl == EVEN) return r * 128 + (c ^ (((r >> 2) & 3) << 1)) * 16;
  if constexpr (pl == ODD) return r * 128 + (c ^ (r & 1)) * 16;
  if constexpr (pl == PAD) return r * 144 + c * 16;
  if constexpr (pl == OFF16) return 16 + r * 128 + c * 16;
  return r * 128 + c * 16;
}
template <Place pl> constexpr int kStageBytes = pl == PAD ? kRows * 144 : pl == OFF16 ? kTileBytes + 32 : kTileBytes;

template <Place pl> __device__ __forceinline__ void copy16(uint32_t dst, const void* src) {
  if constexpr (pl == CA)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

template <Layout lay, Place pl>
__global__ void __launch_bounds__(kWarps * 32) copy_kernel(const uint8_t* __restrict__ src, int64_t tiles, uint4* sink) {
  extern __shared__ __align__(128) uint8_t smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  uint8_t* ring = smem + warp * kStages * kStageBytes<pl>;
  const uint32_t ring_s = uint32_t(__cvta_generic_to_shared(ring));
  const int64_t stride = int64_t(gridDim.x) * kWarps, first = int64_t(blockIdx.x) * kWarps + warp;
  const int r0 = lane / 8, c = lane % 8;
  auto issue = [&](int64_t t, int buf) {
    if (t < tiles) {
      const int64_t page = t / kHeads, head = t % kHeads;
      const uint8_t* base = lay == NHD ? src + page * kPageBytes + head * kRowBytes : src + t * kTileBytes;
      const int64_t row_step = lay == NHD ? kHeads * kRowBytes : kRowBytes;
#pragma unroll
      for (int it = 0; it < kRows / 4; ++it) {
        const int r = it * 4 + r0;
        copy16<pl>(ring_s + buf * kStageBytes<pl> + smem_offset<pl>(r, c), base + r * row_step + c * 16);
      }
    }
    asm volatile("cp.async.commit_group;\n" ::);
  };
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (int s = 0; s < kStages - 1; ++s) issue(first + s * stride, s);
  int buf = 0;
  for (int64_t t = first; t < tiles; t += stride) {
    issue(t + (kStages - 1) * stride, (buf + kStages - 1) % kStages);
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 1));
    __syncwarp();
    // Consume one 16-byte word per lane, so that the copies are used.
    const uint4 v = *reinterpret_cast<const uint4*>(ring + buf * kStageBytes<pl> + smem_offset<pl>(lane / 2, lane % 8));
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
    __syncwarp();
    buf = (buf + 1) % kStages;
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
  if ((acc.x | acc.y | acc.z | acc.w) == 0x9e3779b9u) sink[0] = acc;  // keeps acc live, never true in practice
}

template <Layout lay, Place pl> float run(const uint8_t* src, int64_t bytes, uint4* sink, int sms, int reps) {
  const int smem = kWarps * kStages * kStageBytes<pl>;
  auto k = copy_kernel<lay, pl>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0));
    k<<<3 * sms, kWarps * 32, smem>>>(src, bytes / kTileBytes, sink);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float t = 0;
    CK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int main(int argc, char** argv) {
  const bool once = argc > 1 && std::strcmp(argv[1], "once") == 0;
  const int64_t bytes = once ? (int64_t(64) << 20) : (int64_t(1) << 30);
  const int reps = once ? 1 : 7;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint8_t* src = nullptr;
  uint4* sink = nullptr;
  CK(cudaMalloc(&src, bytes));
  CK(cudaMemset(src, 1, bytes));
  CK(cudaMalloc(&sink, sizeof(uint4)));
  struct V { const char* name; float (*fn)(const uint8_t*, int64_t, uint4*, int, int); };
  const V vs[] = {{"nhd_id", run<NHD, ID>},   {"nhd_swz", run<NHD, SWZ>}, {"nhd_even", run<NHD, EVEN>},
                  {"nhd_odd", run<NHD, ODD>}, {"nhd_pad", run<NHD, PAD>}, {"nhd_ca", run<NHD, CA>},
                  {"nhd_off16", run<NHD, OFF16>}, {"hnd_id", run<HND, ID>}, {"hnd_swz", run<HND, SWZ>}};
  for (const V& v : vs) {
    const float ms = v.fn(src, bytes, sink, sms, reps);
    std::printf("%s %.0f\n", v.name, double(bytes) / (ms * 1e-3) / 1e9);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
