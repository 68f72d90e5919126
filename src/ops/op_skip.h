// Cost by omission: PORTLLM_SKIP_OPS=OP[,OP...] makes the op layer launch nothing for those ops,
// so a timed run without them says what they add to a step, programmatic launch overlaps and graph
// replay included (a profiler that times kernels one by one cannot: it serializes them). Results
// are wrong while it is set, and a warning says so once. Only ops whose outputs are float data
// may be skipped: a skipped op that writes indices (routing, permutation, sampling) would send
// later kernels to arbitrary addresses, so naming one is an error.
#pragma once
#include "ops/op.h"

namespace portllm {

// Whether any op is skipped (read once). Cheap: run() asks it on every call.
bool op_skipping_enabled();
bool op_skipped(Op op);

}  // namespace portllm
