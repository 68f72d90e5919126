#include "ops/op_args_sample.h"

namespace portllm {

OpDesc SampleArgs::desc() const {
  OpDesc d;
  d.op = Op::SAMPLE;
  d.dtype[0] = logits.dtype;
  d.dim[0] = logits.size(-1);
  d.flags = adj_offsets.defined() ? 1u : 0u;
  return d;
}

}  // namespace portllm
