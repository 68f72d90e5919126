#include "ops/op_args_hybrid.h"

namespace portllm {

OpDesc CausalConv1dArgs::desc(Op op) const {
  OpDesc d;
  d.op = op;
  d.dtype[0] = x.dtype;
  d.dtype[1] = weight.dtype;
  d.dtype[2] = conv_state.dtype;
  d.dim[0] = x.size(-1);
  d.dim[1] = weight.size(-1);
  d.flags = silu ? 1u : 0u;
  return d;
}

OpDesc GatedDeltaRuleArgs::desc(Op op) const {
  OpDesc d;
  d.op = op;
  d.dtype[0] = q.dtype;
  d.dtype[1] = a.dtype;
  d.dtype[2] = state.dtype;
  d.dim[0] = q.size(-1);
  d.dim[1] = v.size(-1);
  d.dim[2] = v.size(1) / q.size(1);
  d.flags = l2norm_qk ? 1u : 0u;
  return d;
}

OpDesc GatedRmsNormArgs::desc() const {
  OpDesc d;
  d.op = Op::GATED_RMS_NORM;
  d.dtype[0] = x.dtype;
  d.dtype[1] = weight.dtype;
  d.dim[0] = x.size(-1);
  return d;
}

OpDesc SigmoidMulArgs::desc() const {
  OpDesc d;
  d.op = Op::SIGMOID_MUL;
  d.dtype[0] = x.dtype;
  d.flags = gate.size(-1) == 1 && x.size(-1) != 1 ? 1u : 0u;
  return d;
}

}  // namespace portllm
