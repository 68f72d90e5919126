// CPU MATMUL_FP8_BLOCK: fp8_e4m3 weights stay fp8 in memory and are dequantized per 128x128
// block (or with a per-tensor scale) on the fly, a row or a panel at a time, threaded over
// output panels. The CPU has no fp8 arithmetic, so this is the dequantizing kernel that
// supports() offers every device without native fp8.
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/weight_rows.h"
#include "core/thread_pool.h"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::cpu {

namespace {
void matmul_fp8(const MatmulArgs& a, Stream&) {
  const int64_t M = a.x.size(0), N = a.w.size(0), K = a.w.size(1);
  Fp8Scales s;
  s.scale = a.w_scale.ptr<float>();
  s.block_n = a.block_n > 0 && a.block_k > 0 ? a.block_n : 0;
  s.block_k = a.block_k;
  s.ld = s.block_n > 0 ? a.w_scale.size(1) : 0;
  const int64_t panel = M <= 4 ? 16 : 64;
  const int64_t panels = (N + panel - 1) / panel;
  ThreadPool::global().parallel_for(panels, [&](int64_t p0, int64_t p1, int) {
    std::vector<float> buf;
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n0 = p * panel, nn = std::min(panel, N - n0);
      gemm_panel(a.x.ptr<float>(), a.x.strides[0], M, a.w.data, a.w.dtype, a.w.strides[0], K, n0, nn, s,
                 a.out.ptr<float>(), a.out.strides[0], buf);
      if (a.bias.defined()) {
        std::vector<float> b(static_cast<size_t>(nn));
        widen(a.bias.dtype, static_cast<const char*>(a.bias.data) + n0 * int64_t(dtype_size(a.bias.dtype)), b.data(), nn);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t i = 0; i < nn; ++i) a.out.ptr<float>()[m * a.out.strides[0] + n0 + i] += b[size_t(i)];
      }
    }
  }, grain_for(panel * K * M));
}

bool supports(const OpDesc& d, const DeviceCaps& caps) {
  return caps.avx2 && d.dtype[0] == DType::F32 && d.dtype[1] == DType::F8E4M3 && d.dtype[2] == DType::F32;
}
}  // namespace

void register_matmul_fp8_kernels() {
  register_kernel<MatmulArgs>(Op::MATMUL_FP8_BLOCK, DeviceKind::CPU, "cpu.matmul_fp8_dequant", 10, supports, matmul_fp8);
}

}  // namespace portllm::cpu
