// Hopper (sm_90) bulk copies global -> shared memory by the tensor memory accelerator, completed
// on a shared-memory barrier (inline PTX). NVIDIA-only (ARCHITECTURE.md rule 4): included by fast
// paths that have a portable sibling; every function here is for __CUDA_ARCH__ >= 900 code.
//
// Why: a cp.async copy is one 16-byte request per thread, and the requests a compute unit keeps
// in flight bound its share of the bandwidth (gemv_preload.cu: 2.4 TB/s over 124 units). A bulk
// copy is one instruction for a whole row, moved by the copy engine without the threads.
#pragma once
#if defined(PORTLLM_GPU_MUSA)
#error "bulk_copy_sm90.cuh is NVIDIA-only"
#endif
#include <cstdint>

namespace portllm::gpu::sm90 {

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// A barrier that completes when one arrival has been made and `bytes` have landed (expect_tx).
// One thread initializes it; the block then needs a barrier before other threads use it.
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(arrivals) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
// Waits until the barrier's phase `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}
// bytes (a multiple of 16; both addresses 16-byte aligned) from src to dst, counted on bar.
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}

}  // namespace portllm::gpu::sm90
