// CPU matmul for f32 activations and f32/f16/bf16 weights, weights kept in their stored dtype.
// Few rows (decode): a threaded GEMV that widens weights 8 at a time in registers, so the
// weight bytes stream from memory once per step (the bandwidth roofline). Many rows (prefill):
// each thread widens a 64-row weight panel into a private f32 buffer and runs a single-threaded
// OpenBLAS sgemm on it, so the widening cost is amortized over all M rows.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/simd.h"
#include "core/thread_pool.h"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::cpu {

namespace {
constexpr int64_t kGemvMaxRows = 4;
constexpr int64_t kPanel = 64;

template <int R>
void gemv_rows(const MatmulArgs& a, int64_t n0, int64_t n1) {
  const int64_t K = a.w.size(1), sx = a.x.strides[0], so = a.out.strides[0];
  const float* x = a.x.ptr<float>();
  const DType wt = a.w.dtype;
  for (int64_t n = n0; n < n1; ++n) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    int64_t k = 0;
    if (wt == DType::F32) {
      const float* w = a.w.ptr<float>() + n * a.w.strides[0];
      for (; k + 8 <= K; k += 8) {
        __m256 wv = _mm256_loadu_ps(w + k);
        for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + r * sx + k), acc[r]);
      }
    } else {
      const uint16_t* w = a.w.ptr<uint16_t>() + n * a.w.strides[0];
      const bool bf = wt == DType::BF16;
      for (; k + 8 <= K; k += 8) {
        __m256 wv = bf ? load8_bf16(w + k) : load8_f16(w + k);
        for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + r * sx + k), acc[r]);
      }
    }
    float tail_w[8];
    const int64_t rem = K - k;
    if (rem > 0) widen(wt, static_cast<const char*>(a.w.data) + (n * a.w.strides[0] + k) * int64_t(dtype_size(wt)), tail_w, rem);
    float bias_v = 0.f;
    if (a.bias.defined())
      widen(a.bias.dtype, static_cast<const char*>(a.bias.data) + n * int64_t(dtype_size(a.bias.dtype)), &bias_v, 1);
    for (int r = 0; r < R; ++r) {
      float s = hsum(acc[r]);
      for (int64_t j = 0; j < rem; ++j) s += tail_w[j] * x[r * sx + k + j];
      a.out.ptr<float>()[r * so + n] = s + bias_v;
    }
  }
}

void gemv(const MatmulArgs& a) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  ThreadPool::global().parallel_for(N, [&](int64_t n0, int64_t n1, int) {
    switch (M) {
      case 1: gemv_rows<1>(a, n0, n1); break;
      case 2: gemv_rows<2>(a, n0, n1); break;
      case 3: gemv_rows<3>(a, n0, n1); break;
      default: gemv_rows<4>(a, n0, n1); break;
    }
  }, std::max<int64_t>(16, grain_for(K * M)));
}

void gemm(const MatmulArgs& a) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  const int64_t panels = (N + kPanel - 1) / kPanel;
  ThreadPool::global().parallel_for(panels, [&](int64_t p0, int64_t p1, int) {
    std::vector<float> panel;
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n0 = p * kPanel, nn = std::min(kPanel, N - n0);
      const float* wp;
      int64_t ldw;
      if (a.w.dtype == DType::F32) {
        wp = a.w.ptr<float>() + n0 * a.w.strides[0];
        ldw = a.w.strides[0];
      } else {
        panel.resize(size_t(nn * K));
        for (int64_t i = 0; i < nn; ++i)
          widen(a.w.dtype, static_cast<const char*>(a.w.data) + (n0 + i) * a.w.strides[0] * 2, panel.data() + i * K, K);
        wp = panel.data();
        ldw = K;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(nn), int(K), 1.f,
                  a.x.ptr<float>(), int(a.x.strides[0]), wp, int(ldw), 0.f,
                  a.out.ptr<float>() + n0, int(a.out.strides[0]));
      if (a.bias.defined()) {
        std::vector<float> b(static_cast<size_t>(nn));
        widen(a.bias.dtype, static_cast<const char*>(a.bias.data) + n0 * int64_t(dtype_size(a.bias.dtype)), b.data(), nn);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t i = 0; i < nn; ++i) a.out.ptr<float>()[m * a.out.strides[0] + n0 + i] += b[size_t(i)];
      }
    }
  }, grain_for(kPanel * K * M));
}

void matmul(const MatmulArgs& a, Stream&) {
  if (a.x.size(0) <= kGemvMaxRows) {
    // Process rows in groups of up to 4 (the GEMV keeps one accumulator per row in registers).
    gemv(a);
  } else {
    gemm(a);
  }
}

// BATCHED_MATMUL: the matmul above per batch (each batch is already threaded over N).
void batched_matmul(const BatchedMatmulArgs& a, Stream& s) {
  for (int64_t b = 0; b < a.w.size(0); ++b)
    matmul(MatmulArgs{a.out.select(0, b), a.x.select(0, b), a.w.select(0, b), {}, {}, 0, 0}, s);
}

bool supports(const OpDesc& d, const DeviceCaps& caps) {
  const bool wt_ok = d.dtype[1] == DType::F32 || d.dtype[1] == DType::BF16 || d.dtype[1] == DType::F16;
  return caps.avx2 && d.dtype[0] == DType::F32 && d.dtype[2] == DType::F32 && wt_ok;
}
}  // namespace

void register_matmul_kernels() {
  openblas_set_num_threads(1);  // we thread over weight panels ourselves
  register_kernel<MatmulArgs>(Op::MATMUL, DeviceKind::CPU, "cpu.matmul", 10, supports, matmul);
  register_kernel<BatchedMatmulArgs>(Op::BATCHED_MATMUL, DeviceKind::CPU, "cpu.batched_matmul", 10, supports,
                                     batched_matmul);
}

}  // namespace portllm::cpu
