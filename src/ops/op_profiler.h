// Per-kernel device time of every op call, for finding where a forward pass spends its time
// without a vendor profiler. Off unless PORTLLM_PROFILE_OPS=1. Then each op call is bracketed by
// two device events on its stream (no synchronization, so kernels still queue back to back);
// every 256 calls, and when the run ends (flush_op_profile, called by the CLI before the device
// goes away), the stream is synchronized and the elapsed times are harvested. The table, sorted
// by total time with one row per (kernel, op descriptor), goes to stderr. On the CPU backend,
// events measure host wall time of the (synchronous) kernels.
#pragma once
#include <functional>

#include "ops/registry.h"

namespace portllm {

bool op_profiling_enabled();
// Runs `launch` (which runs kernel k on ctx's stream) bracketed by events, attributed to (k, desc).
void profile_op(OpContext& ctx, const KernelInfo& k, const OpDesc& desc, const std::function<void()>& launch);
// Harvests pending events and prints the table (no-op when profiling is off or nothing ran).
void flush_op_profile();

}  // namespace portllm
