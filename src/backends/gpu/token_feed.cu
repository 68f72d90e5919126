// TOKEN_FEED (ops/op_args.h): a decode step's packed inputs from their device staging copy, with
// the fed token ids gathered from the step before's sampled ids. It replaces, on the step's
// critical path, a host->device copy and one device copy per run of fed rows: the upload into the
// staging copy runs on the upload stream while the step before computes
// (runtime/decode_graphs.cpp), and this one launch is all the main stream waits for.
//
// One thread per 32-bit word; the ~35k words of a 256-sequence step are a few microseconds.
#include <algorithm>

#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
__global__ void token_feed_kernel(int32_t* out, const int32_t* staged, int64_t N, const int32_t* rows, int64_t n,
                                  const int32_t* sampled, int64_t R, int64_t ids_offset) {
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < N; k += int64_t(gridDim.x) * blockDim.x) {
    int32_t v = staged[k];
    const int64_t i = k - ids_offset;
    if (i >= 0 && i < n) {
      const int32_t r = rows[i];
      if (r >= 0 && r < R) v = sampled[r];
    }
    out[k] = v;
  }
}

void token_feed(const TokenFeedArgs& a, Stream& s) {
  const int64_t N = a.out.numel();
  if (N == 0) return;
  constexpr int kThreads = 256;
  const unsigned grid = unsigned(std::min<int64_t>((N + kThreads - 1) / kThreads, 1024));
  const int64_t R = a.sampled.defined() ? a.sampled.numel() : 0;
  token_feed_kernel<<<grid, kThreads, 0, native_stream(s)>>>(a.out.ptr<int32_t>(), a.staged.ptr<int32_t>(), N,
                                                           a.rows.ptr<int32_t>(), a.rows.numel(),
                                                           R ? a.sampled.ptr<int32_t>() : nullptr, R, a.ids_offset);
  check_launch("token_feed");
}
}  // namespace

void register_token_feed_kernels() {
  register_kernel<TokenFeedArgs>(Op::TOKEN_FEED, kGpuKind, "gpu.token_feed", 10,
                                 [](const OpDesc&, const DeviceCaps&) { return true; }, token_feed);
}

}  // namespace portllm::gpu
