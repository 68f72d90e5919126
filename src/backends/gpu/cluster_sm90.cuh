// NVIDIA thread-block cluster primitives for sm_90+ (inline PTX): the blocks of a cluster run at
// the same time and may read each other's shared memory (distributed shared memory). Kernels use
// them only on devices with DeviceCaps::max_cluster_blocks > 0 and launch through
// gpuLaunchClustered (vendor/cuda.h). ARCHITECTURE.md rule 4: only NVIDIA-only fast-path files
// include this header; on sm_80 the functions compile to traps (never launched there).
#pragma once
#if defined(PORTLLM_GPU_MUSA)
#error "cluster_sm90.cuh is NVIDIA-only"
#endif
#include <cstdint>

namespace portllm::gpu::sm90 {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Every thread of every block of the cluster arrives; shared-memory writes before it are visible
// to the cluster's reads after it (release / acquire). Called by all threads, in uniform control flow.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// The address, in the cluster's shared window, of this block's shared variable p in block `rank`.
__device__ __forceinline__ uint32_t cluster_map(const void* p, uint32_t rank) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ float cluster_load(uint32_t addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
#else
__device__ __forceinline__ void cluster_sync() { __trap(); }
__device__ __forceinline__ uint32_t cluster_rank() { __trap(); return 0; }
__device__ __forceinline__ uint32_t cluster_map(const void*, uint32_t) { __trap(); return 0; }
__device__ __forceinline__ float cluster_load(uint32_t) { __trap(); return 0.f; }
#endif

}  // namespace portllm::gpu::sm90
