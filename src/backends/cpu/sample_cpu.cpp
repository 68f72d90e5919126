// SAMPLE on the CPU: rows in parallel, each through the shared host row function
// (ops/sample_row.h, the same code as the engine's host sampler). Works in place on the logits:
// on the CPU the engine's logits are already host memory, so sampling costs no copy.

#include "backends/cpu/cpu_kernels.h"
#include "core/thread_pool.h"
#include "ops/op_args_sample.h"
#include "ops/registry.h"
#include "ops/sample_math.h"
#include "ops/sample_row.h"

namespace portllm::cpu {

namespace {

void sample(const SampleArgs& a, Stream&) {
  const int64_t B = a.logits.size(0), V = a.logits.size(1);
  ThreadPool::global().parallel_for(B, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const SampleRowParams p = a.row_params(r);
      int32_t& out = static_cast<int32_t*>(a.out.data)[r * a.out.strides[0]];
      if (p.flags & kSampleSkipRow) {
        out = -1;
        continue;
      }
      std::span<float> row(static_cast<float*>(a.logits.data) + r * a.logits.strides[0], size_t(V));
      if (a.adj_offsets.defined()) {
        const int32_t* off = static_cast<const int32_t*>(a.adj_offsets.data);
        const int32_t* e = static_cast<const int32_t*>(a.adj.data);
        sampling::apply_adjustments(row, p, std::span<const int32_t>(e + int64_t(off[r]) * kSampleAdjWords,
                                                                     size_t(off[r + 1] - off[r]) * kSampleAdjWords));
      }
      out = sampling::sample_adjusted_row(row, p.temperature, p.min_p, p.top_k, p.top_p,
                                          sampling::uniform_at(p.seed(), p.counter()));
    }
  });
}

}  // namespace

void register_sample_kernels() {
  register_kernel<SampleArgs>(Op::SAMPLE, DeviceKind::CPU, "cpu.sample", 10,
                              [](const OpDesc& d, const DeviceCaps&) { return d.dtype[0] == DType::F32; }, sample);
}

}  // namespace portllm::cpu
