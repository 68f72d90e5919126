// Launching a kernel that overlaps the tail of the kernel before it (programmatic dependent launch).
//
// At batch-1 decode a step is ~10 short kernels per layer, and each one's launch, block ramp and
// the previous kernel's tail leave the memory system idle for a few microseconds. A kernel launched
// with launch_programmatic() may start while its predecessor drains: it issues what depends on no
// earlier kernel (weights), then calls gpu_wait_for_predecessor() before touching anything an
// earlier kernel writes or reads, and gpu_allow_successor() so the next one can start early in turn.
// Only kernels that make that call may be launched this way: a kernel launched with the attribute
// but without the wait would race its predecessor. Before the wait a kernel may read only what no
// kernel writes: weights, and a step's metadata (sequence lengths, query starts, block tables,
// slot mappings), which the engine uploads by copy before the step's first kernel and which no
// kernel modifies (a future on-device metadata update must move those reads after the wait).
// One more thing is settled: every kernel but the immediate predecessor has finished once a kernel
// starts (the predecessor allowed it only after its own wait), so what only earlier kernels wrote
// may be read too, where the kernel can tell it apart. ATTN_DECODE's tensor-core kernel copies
// cache tiles of earlier steps' keys before the wait; this step's K/V row (written by the
// preparation kernel just before it) and q are read after. MOE_DOWN_COMBINE reads the routing
// (MOE_ROUTE's, two kernels back) and its first expert weights before the wait; only h, the gate|up
// GEMM's output, after. Such early reads go through L2 (cp.async, gpu_load_settled): an earlier
// kernel's value at the same address may still sit in the SM's L1.
// A kernel may also allow its successor later than right after its wait, or not at all (then at
// its exit): ATTN_DECODE does so for long contexts, whose reads the successor's early weight loads
// would slow (attention_decode_mma.cu). One kernel allows it before its wait:
// QK_NORM_ROPE_KV_WRITE, whose successor, the attention, then starts while the qkv GEMV may still
// run; so for the attention only earlier steps' writes and the step's metadata are settled before
// its wait, which is all it reads there (qk_norm_rope_kv_write.cu: prep_trigger_early).
//
// Where the device has no such launch (MUSA, NVIDIA before sm_90, or PORTLLM_PDL=0), it is an
// ordinary launch and the two device calls do nothing: one kernel source for every device.
#pragma once
#include <utility>

#include "backends/gpu/gpu_runtime.h"
#include "backends/gpu/vendor/vendor.h"

namespace portllm::gpu {

template <class... P, class... A>
void launch_programmatic(Stream& s, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, A&&... args) {
#if PORTLLM_GPU_PROGRAMMATIC_LAUNCH
  if (caps_of(s).programmatic_launch) {
    (void)gpuLaunchProgrammatic(kernel, grid, block, smem, native_stream(s), std::forward<A>(args)...);
    return;
  }
#endif
  kernel<<<grid, block, smem, native_stream(s)>>>(std::forward<A>(args)...);
}

}  // namespace portllm::gpu
