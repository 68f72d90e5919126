// The e4m3 tile layout of the tensor-core decode attention (attention_decode_mma.cu, kDirect: fp8
// caches at head dim 128): how copied rows are laid out in shared memory and which 16-byte words
// of a tile each lane reads to build its MMA fragments. Both forms of the kernel, the row form and
// heads as N (attention_decode_heads_n.cuh), read the same words. NVIDIA-only like their kernel.
#pragma once
#if defined(PORTLLM_GPU_MUSA)
#error "attention_decode_fp8_fragments.cuh is NVIDIA-only"
#endif
#include <cstdint>

namespace portllm::gpu {

// Fragments from e4m3 tiles (kDirect). An m16n8k16 B fragment is, for lane (g, t) = (lane / 4,
// lane % 4), two pairs of k-consecutive values in column g; ldmatrix builds them from 16-bit
// rows, and no sm_80/sm_90 instruction does it from 8-bit ones. Two freedoms make plain shared
// loads do it instead, because attention sums over both the head dims (S = Q K^T) and the keys
// (O = P V):
// - head dims: k-step s of S takes, in lane t's k slots {2t, 2t+1, 2t+8, 2t+9}, the dims
//   32t + 4s + {0, 1, 2, 3}. Q's A fragments are built with the same map, so a lane's K
//   fragments for all 8 k-steps are 32 contiguous bytes of its key row (two 16-byte loads).
// - keys: S's column n of n-tile nt is key 4 (n / 2) + 2 nt + n % 2 of the tile, which makes
//   P V's k slots {2t, 2t+1, 2t+8, 2t+9} keys 4t .. 4t + 3. Output n-tile j's column n is dim
//   16 n + j, so a lane's V values for all 16 n-tiles are 16 contiguous bytes of each of 4 key
//   rows; two byte permutes pair the keys per dim, one conversion per pair widens them.
// Copied rows have their 16-byte chunks permuted (fp8_chunk) so that neither pattern's loads
// conflict in shared memory banks. Per 16-key tile a lane then issues 8 16-byte loads, 16 byte
// permutes and 64 conversions, and no shared stores, ldmatrix or widening barrier.
__device__ __forceinline__ int fp8_chunk(int row, int c) { return c ^ (row & 1) ^ (((row >> 2) & 3) << 1); }
// A lane's words of a copied e4m3 tile pair, shared by both forms of the kernel: of K, key rows
// 4 (g / 2) + g % 2 + 2 nt (nt = 0, 1), bytes 32t .. 32t + 31 of each; of V, key rows 4t .. 4t + 3,
// bytes 16g .. 16g + 15 of each.
template <int D>
__device__ __forceinline__ void load_k_words(const uint8_t* tK, int g, int t, uint4 (&kw)[2][2]) {
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    const int r = 4 * (g / 2) + 2 * nt + g % 2;
#pragma unroll
    for (int h = 0; h < 2; ++h) kw[nt][h] = *reinterpret_cast<const uint4*>(tK + r * D + fp8_chunk(r, 2 * t + h) * 16);
  }
}
template <int D>
__device__ __forceinline__ void load_v_words(const uint8_t* tV, int g, int t, uint4 (&vw)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = 4 * t + i;
    vw[i] = *reinterpret_cast<const uint4*>(tV + r * D + fp8_chunk(r, g) * 16);
  }
}
__device__ __forceinline__ uint32_t word_of(const uint4& v, int c) {
  return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w;
}

}  // namespace portllm::gpu
