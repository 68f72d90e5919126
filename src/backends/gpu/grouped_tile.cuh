// Which rows a grouped-GEMM block owns (moe_gemm.cu, moe_gemm_wmma.cu). With expert offsets,
// block b of the row-tile grid finds its expert e by a binary search in tile_start (the prefix
// sum of ceil(rows_e / BM), launch_tile_start) and owns rows [row0, row_end) of e's segment;
// without, it owns rows [b * BM, b * BM + BM) of the single group. Returns false for blocks past
// the real tile count (the grid is an upper bound).
#pragma once
#include <cstdint>

#include "backends/gpu/grouped_gemm.h"

namespace portllm::gpu {

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

}  // namespace portllm::gpu
