// Block-wide inclusive prefix sum of one int per thread (Hillis-Steele in shared memory). Portable
// (no warp intrinsics, any warp size); used by the MoE kernels' offset computations.
#pragma once

namespace portllm::gpu {

// Every thread of the block must call it with the same smem (blockDim.x ints, blockDim.x <= 1024).
// Returns this thread's inclusive prefix; total receives the sum over the block.
__device__ __forceinline__ int block_scan_incl(int v, int* smem, int& total) {
  const int tid = threadIdx.x, n = blockDim.x;
  smem[tid] = v;
  __syncthreads();
  for (int off = 1; off < n; off <<= 1) {
    const int add = tid >= off ? smem[tid - off] : 0;
    __syncthreads();
    smem[tid] += add;
    __syncthreads();
  }
  const int r = smem[tid];
  total = smem[n - 1];
  __syncthreads();  // smem may be reused by the caller right after
  return r;
}

}  // namespace portllm::gpu
