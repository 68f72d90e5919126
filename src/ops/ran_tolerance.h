// Which numerics computed a call. A kernel may hand a call it cannot take to another (the next
// kernel by priority); the conformance runner judges the result by the tolerance floor
// (KernelInfo::min_tolerance) of the kernel that computed it, not of the one it called.
#pragma once

namespace portllm {

// The largest min_tolerance among the kernels that ran on this thread since the last reset
// (KernelRegistry wraps the run of every kernel that has one).
double ran_min_tolerance();
void reset_ran_min_tolerance();

}  // namespace portllm
