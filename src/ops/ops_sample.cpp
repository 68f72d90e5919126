#include "ops/ops_sample.h"

#include "ops/ops.h"

namespace portllm::ops {

void sample(OpContext& ctx, const SampleArgs& a) { run(ctx, a.desc(), a); }

}  // namespace portllm::ops
