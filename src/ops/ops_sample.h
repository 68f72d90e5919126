// Op entry point of SAMPLE (args and semantics in ops/op_args_sample.h).
#pragma once
#include "ops/op_args_sample.h"
#include "ops/registry.h"

namespace portllm::ops {

void sample(OpContext& ctx, const SampleArgs& args);

}  // namespace portllm::ops
