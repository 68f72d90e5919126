// Weight rows as f32 for the CPU GEMM/GEMV kernels of any stored weight dtype: f32/f16/bf16 are
// widened, f8_e4m3 is dequantized on the fly with its block (or per-tensor) scale. Weights
// stay in their stored dtype in memory; only a row or a panel is widened at a time.
#pragma once
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cpu/simd.h"
#include "core/dtype.h"

namespace portllm::cpu {

// Dequantization multipliers of an fp8 weight [N, K]: scale[(n / block_n) * ld + k / block_k],
// or a single per-tensor value when block_n <= 0.
struct Fp8Scales {
  const float* scale = nullptr;
  int64_t ld = 0;
  int block_n = 0, block_k = 0;
};

// Row n (K values) of weight w (row stride ldw elements) as f32 into dst.
inline void weight_row_f32(const void* w, DType wt, int64_t ldw, int64_t n, int64_t K, const Fp8Scales& s,
                           float* dst) {
  if (wt != DType::F8E4M3) {
    widen(wt, static_cast<const char*>(w) + n * ldw * int64_t(dtype_size(wt)), dst, K);
    return;
  }
  const uint8_t* row = static_cast<const uint8_t*>(w) + n * ldw;
  if (s.block_n <= 0) {
    fp8_to_f32_scaled(row, dst, K, s.scale[0]);
    return;
  }
  const float* srow = s.scale + (n / s.block_n) * s.ld;
  for (int64_t k0 = 0; k0 < K; k0 += s.block_k)
    fp8_to_f32_scaled(row + k0, dst + k0, std::min<int64_t>(K - k0, s.block_k), srow[k0 / s.block_k]);
}

// out[m, n0 + i] = x[m] . W[n0 + i] for m < M, i < nn. Few rows: widen one weight row at a time
// into an L1-sized buffer and dot it with every x row. Many rows: widen an nn-row panel and run
// a single-threaded sgemm on it (callers thread over panels).
inline void gemm_panel(const float* x, int64_t ldx, int64_t M, const void* w, DType wt, int64_t ldw,
                       int64_t K, int64_t n0, int64_t nn, const Fp8Scales& s, float* out, int64_t ldo,
                       std::vector<float>& buf) {
  if (M <= 4) {
    buf.resize(size_t(K));
    for (int64_t i = 0; i < nn; ++i) {
      const float* wr;
      if (wt == DType::F32) wr = static_cast<const float*>(w) + (n0 + i) * ldw;
      else { weight_row_f32(w, wt, ldw, n0 + i, K, s, buf.data()); wr = buf.data(); }
      for (int64_t m = 0; m < M; ++m) out[m * ldo + n0 + i] = dot_f32(x + m * ldx, wr, K);
    }
    return;
  }
  const float* wp;
  int64_t ld;
  if (wt == DType::F32) {
    wp = static_cast<const float*>(w) + n0 * ldw;
    ld = ldw;
  } else {
    buf.resize(size_t(nn * K));
    for (int64_t i = 0; i < nn; ++i) weight_row_f32(w, wt, ldw, n0 + i, K, s, buf.data() + i * K);
    wp = buf.data();
    ld = K;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(nn), int(K), 1.f, x, int(ldx), wp, int(ld),
              0.f, out + n0, int(ldo));
}

}  // namespace portllm::cpu
