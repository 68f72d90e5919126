// The heads-as-N form of the tensor-core decode attention (attention_decode_mma.cu, kHN; the
// default for fp8 caches, opt-in for 16-bit ones: heads_as_n() in attention_decode_mma_policy.cpp): head dim 128, up to 8 query heads per KV head, fp8 (e4m3) or 16-bit
// cache. S^T = K Q^T and O^T += V^T P^T, the keys and head dims as the MMAs' M rows and the query
// heads as their 8 columns. The row form fills 4 of 16 rows with Qwen3-8B's 4 heads per KV head,
// this one 4 of 8 columns: per 16-key tile 8 + 8 MMAs instead of 16 + 16, 4 exponentials per lane
// instead of 8, and 8 output tiles (32 registers) instead of 16 (64).
// 16-bit tiles: K's A fragments by ldmatrix from its rows (keys g, g + 8), V^T's by the
// transposing ldmatrix (output tile i: dims 16i + g, 16i + g + 8), as many as the row form's.
// e4m3 tiles: the loads and conversions are the row form's, from the same rows and chunks
// (attention_decode_fp8_fragments.cuh):
// - S^T's A fragment rows g and g + 8 are key rows pk and pk + 2 (pk = 4 (g / 2) + g % 2, the row
//   form's n-tiles 0 and 1), k-step s the head dims 32t + 4s + {0, 1, 2, 3} as there;
// - its accumulator pairs (key, heads 2t and 2t + 1), packed to f16, become P^T's B fragments
//   by one transpose each (movmatrix): slots 2t, 2t + 1, 2t + 8, 2t + 9 are keys 4t .. 4t + 3;
// - V^T's A fragment of output tile i holds dims 16g + 2i (row g) and 16g + 2i + 1 (row g + 8):
//   a byte permute of two key rows and one conversion give both rows' pairs.
// The softmax's maximum per head is a reduction over the 8 lanes of a column (3 shuffles each
// for the 2 heads a lane holds), run only on tiles that raise some head's maximum.
// A lane (g, t) = (lane / 4, lane % 4) keeps the running state of heads 2t and 2t + 1: maxima
// m0, m1 (uniform over a column's lanes), partial sums l0, l1 over its own keys, and output tiles
// o[i] = (dim(i, g), head 2t), (dim(i, g), 2t + 1), (dim(i, g + 8), 2t), (dim(i, g + 8), 2t + 1).
// NVIDIA-only like its kernel (mma.sync, ldmatrix, movmatrix).
#pragma once
#if defined(PORTLLM_GPU_MUSA)
#error "attention_decode_heads_n.cuh is NVIDIA-only"
#endif
#include <cmath>
#include <cstdint>

#include "backends/gpu/attention_decode_fp8_fragments.cuh"
#include "backends/gpu/mma_sm80.cuh"

namespace portllm::gpu::heads_n {

constexpr int kHeads = 8;     // query heads per block: the MMA's N
constexpr int kTileKeys = 16;  // keys per tile: the MMA's M
constexpr int kRowPad = 12;   // the warps' output rows hold D + kRowPad floats (see out_col)

// Q^T's B fragments (Q staged in shared memory, rows LD apart): column g's k slots {2t, 2t + 1}
// and {2t + 8, 2t + 9} of each k-step, with the e4m3 head-dim map where kE4m3.
template <int D, int LD, bool kE4m3, class TM>
__device__ __forceinline__ void q_fragments(const TM* sQ, int lane, uint32_t (&qb)[D / 16][2]) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int s = 0; s < D / 16; ++s) {
    const TM* q0 = sQ + g * LD + (kE4m3 ? (D / 4) * t + 4 * s : 16 * s + 2 * t);
    qb[s][0] = *reinterpret_cast<const uint32_t*>(q0);
    qb[s][1] = *reinterpret_cast<const uint32_t*>(q0 + (kE4m3 ? 2 : 8));
  }
}

// One 16-key tile starting at key kt (keys at or past `end` masked): sK / sV the 16-bit tiles
// (rows LD apart), tK / tV the e4m3 ones. kLarge: only a split's last tile is masked and
// exponentials flush subnormals; kQScaled: Q carries the score scale (else s_scale applies). o
// holds at least D / 16 output tiles (the kernel's array is the row form's, of D / 8).
template <int D, int LD, class TM, bool kE4m3, bool kLarge, bool kQScaled, int NO>
__device__ __forceinline__ void tile(const TM* sK, const TM* sV, const uint8_t* tK, const uint8_t* tV, int kt,
                                     int end, float s_scale, int lane, const uint32_t (&qb)[D / 16][2],
                                     float (&o)[NO][4], float& m0, float& m1, float& l0, float& l1) {
  static_assert(NO >= D / 16, "an output tile per 16 head dims");
  using namespace sm80;
  auto ex2 = [](float x) {
    if constexpr (kLarge) return ex2_ftz(x);
    else return exp2f(x);
  };
  const int g = lane / 4, t = lane % 4;
  // Accumulator rows g and g + 8 are keys k0 and k0 + kd of the tile.
  const int k0 = kE4m3 ? 4 * (g / 2) + g % 2 : g, kd = kE4m3 ? 2 : 8;
  float sa[2][4] = {};  // even and odd k-steps: two chains of 4 dependent MMAs instead of one of 8
  if constexpr (kE4m3) {
    uint4 kw[2][2];
    load_k_words<D>(tK, g, t, kw);  // key rows k0 and k0 + 2
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      uint32_t a[4];
      widen_fp8x4_f16(word_of(kw[0][ks / 4], ks % 4), a[0], a[2]);
      widen_fp8x4_f16(word_of(kw[1][ks / 4], ks % 4), a[1], a[3]);
      Mma<TM>::run(sa[ks % 2], a, qb[ks][0], qb[ks][1]);
    }
  } else {
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      uint32_t a[4];
      ldsm_x4(a, sK + (lane % 16) * LD + 16 * ks + (lane / 16) * 8);
      Mma<TM>::run(sa[ks % 2], a, qb[ks][0], qb[ks][1]);
    }
  }
  float s[4];  // (key k0, head 2t), (k0, 2t + 1), (k0 + kd, 2t), (k0 + kd, 2t + 1)
#pragma unroll
  for (int e = 0; e < 4; ++e) s[e] = sa[0][e] + sa[1][e];
  if (!kLarge || kt + kTileKeys > end) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[e] = kt + k0 + (e & 2 ? kd : 0) < end ? s[e] * s_scale : -INFINITY;
  } else if (!kQScaled) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[e] *= s_scale;
  }
  // A head's running maximum moves only where some lane's score exceeds it (after the first
  // tiles, rarely): the column reductions, the factors and the rescale run only then, and
  // skipping them is exact. The maxima are uniform over a column's lanes (the reductions hand
  // every lane the result, and the branch is warp-uniform).
  const float c0 = fmaxf(s[0], s[2]), c1 = fmaxf(s[1], s[3]);
  if (__any_sync(0xffffffffu, c0 > m0 || c1 > m1)) {
    const float mn0 = fmaxf(m0, column_max(c0)), mn1 = fmaxf(m1, column_max(c1));  // finite: key kt is valid
    const float alpha0 = ex2(m0 - mn0), alpha1 = ex2(m1 - mn1);
    l0 *= alpha0;
    l1 *= alpha1;
#pragma unroll
    for (int i = 0; i < D / 16; ++i) {
      o[i][0] *= alpha0;
      o[i][1] *= alpha1;
      o[i][2] *= alpha0;
      o[i][3] *= alpha1;
    }
    m0 = mn0;
    m1 = mn1;
  }
  s[0] = ex2(s[0] - m0);
  s[1] = ex2(s[1] - m1);
  s[2] = ex2(s[2] - m0);
  s[3] = ex2(s[3] - m1);
  l0 += s[0] + s[2];  // per-lane partial sums; the column is reduced at the end
  l1 += s[1] + s[3];
  const uint32_t pb0 = movmatrix_trans(Mma<TM>::pack(s[0], s[1]));
  const uint32_t pb1 = movmatrix_trans(Mma<TM>::pack(s[2], s[3]));
  if constexpr (kE4m3) {
    uint4 vw[4];
    load_v_words<D>(tV, g, t, vw);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint32_t r0 = word_of(vw[0], c), r1 = word_of(vw[1], c), r2 = word_of(vw[2], c), r3 = word_of(vw[3], c);
      uint32_t a[4];
      widen_fp8x4_f16(__byte_perm(r0, r1, 0x5140), a[0], a[1]);
      widen_fp8x4_f16(__byte_perm(r2, r3, 0x5140), a[2], a[3]);
      Mma<TM>::run(o[2 * c], a, pb0, pb1);
      widen_fp8x4_f16(__byte_perm(r0, r1, 0x7362), a[0], a[1]);
      widen_fp8x4_f16(__byte_perm(r2, r3, 0x7362), a[2], a[3]);
      Mma<TM>::run(o[2 * c + 1], a, pb0, pb1);
    }
  } else {
#pragma unroll
    for (int i = 0; i < D / 16; ++i) {  // keys 0-7 / 8-15 (lanes 0-15 / 16-31), dims 16i + 0-7 / 8-15
      uint32_t a[4];
      ldsm_x4_trans(a, sV + (lane % 8 + (lane / 16) * 8) * LD + 16 * i + ((lane / 8) % 2) * 8);
      Mma<TM>::run(o[i], a, pb0, pb1);
    }
  }
}

// Column of dim d in a warp's output row: a store's 32 lanes hold heads 2t (+1) and dims
// 16g + 2i (+1), or 16i + g (+8) with 16-bit tiles; one float of padding per 16 dims and rows of
// D + kRowPad floats put them on 32 different banks.
__device__ __forceinline__ int out_col(int d) { return d + (d >> 4); }

// This lane's outputs into its warp's rows (one per head, row_floats apart; heads from ng on are
// padding and skipped).
template <int D, bool kE4m3, int NO>
__device__ __forceinline__ void store_outputs(const float (&o)[NO][4], float* rows, int row_floats, int ng, int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < D / 16; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int hd = 2 * t + (e & 1);
      const int d = kE4m3 ? 16 * g + 2 * i + (e >> 1) : 16 * i + g + 8 * (e >> 1);
      if (hd < ng) rows[hd * row_floats + out_col(d)] = o[i][e];
    }
}

}  // namespace portllm::gpu::heads_n
