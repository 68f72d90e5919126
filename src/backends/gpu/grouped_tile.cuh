// Which rows a grouped-GEMM block owns (moe_gemm.cu, moe_gemm_wmma.cu, moe_gemv.cu). With expert
// offsets, block b of the row-tile grid finds its expert e among the tiles of every expert (the
// prefix sum of ceil(rows_e / BM)) and owns rows [row0, row_end) of e's segment; without, it owns
// rows [b * BM, b * BM + BM) of the single group. Blocks past the real tile count get false (the
// grid is an upper bound computed on the host, so the op needs no host sync).
#pragma once
#include <cstdint>

#include "backends/gpu/block_scan.cuh"
#include "backends/gpu/grouped_gemm.h"

namespace portllm::gpu {

// The tiles of expert e are [first, end) in expert order (end - first = ceil(rows_e / bm)). Walks
// the experts blockDim.x at a time and calls visit(e, first, end) on the thread that holds e.
// Every thread of the block must call it (block_scan_incl synchronizes; the chunk loop's trip
// count is the same for all); smem: blockDim.x ints.
template <class Visit>
__device__ __forceinline__ void scan_expert_tiles(const int32_t* off, int E, int bm, int* smem, Visit&& visit) {
  int carry = 0;
  for (int base = 0; base < E; base += int(blockDim.x)) {
    const int e = base + int(threadIdx.x);
    int v = 0;
    if (e < E) {
      const int c = off[e + 1] - off[e];
      v = c > 0 ? (c + bm - 1) / bm : 0;
    }
    int total = 0;
    const int incl = block_scan_incl(v, smem, total);
    if (e < E) visit(e, carry + incl - v, carry + incl);
    carry += total;
  }
}

// Tile lookup through tile_start (launch_tile_start): a binary search by one thread per block.
template <int BM>
__device__ __forceinline__ bool grouped_tile(const GroupedGemmParams& p, const int32_t* tile_start, int& e,
                                             int64_t& row0, int64_t& row_end) {
  e = 0;
  if (p.expert_offsets) {
    const int b = int(blockIdx.x), E = p.num_experts;
    if (b >= tile_start[E]) return false;
    int lo = 0, hi = E - 1;  // largest e with tile_start[e] <= b (then tile_start[e + 1] > b)
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (tile_start[mid] <= b) lo = mid;
      else hi = mid - 1;
    }
    e = lo;
    row0 = int64_t(p.expert_offsets[e]) + int64_t(b - tile_start[e]) * BM;
    const int64_t seg_end = p.expert_offsets[e + 1];
    row_end = row0 + BM < seg_end ? row0 + BM : seg_end;
  } else {
    row0 = int64_t(blockIdx.x) * BM;
    row_end = row0 + BM;
  }
  if (row_end > p.rows) row_end = p.rows;
  return true;
}

// The same lookup without tile_start, for row tile b (blockIdx.x for the GEMV, blockIdx.y for
// moe_gemm_mma.cu): the block scans the expert tiles itself and the thread whose expert owns tile
// b publishes it in shared memory. For short blocks (the decode GEMV) this replaces a tile_start
// launch plus a log2(E)-deep chain of dependent loads with one round trip to L2 and a
// shared-memory scan. Every thread of the block must call it, and all get the same answer.
// smem: blockDim.x + 2 ints.
template <int BM>
__device__ __forceinline__ bool grouped_tile_scan(const GroupedGemmParams& p, int* smem, int b, int& e,
                                                  int64_t& row0, int64_t& row_end) {
  if (!p.expert_offsets) {
    e = 0;
    row0 = int64_t(b) * BM;
    row_end = row0 + BM < p.rows ? row0 + BM : p.rows;
    return true;
  }
  int* found = smem + blockDim.x;  // {expert, its first tile}
  if (threadIdx.x == 0) found[0] = -1;  // ordered before any visit by the scan's first barrier
  scan_expert_tiles(p.expert_offsets, p.num_experts, BM, smem, [&](int ex, int first, int end) {
    if (first <= b && b < end) {  // tile ranges are disjoint: at most one thread writes
      found[0] = ex;
      found[1] = first;
    }
  });
  __syncthreads();
  e = found[0];
  if (e < 0) return false;  // past the real tile count
  row0 = int64_t(p.expert_offsets[e]) + int64_t(b - found[1]) * BM;
  const int64_t seg_end = p.expert_offsets[e + 1];
  row_end = row0 + BM < seg_end ? row0 + BM : seg_end;
  if (row_end > p.rows) row_end = p.rows;
  return true;
}

}  // namespace portllm::gpu
