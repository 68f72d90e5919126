#include "model/layers/mlp.h"

#include "ops/ops.h"

namespace portllm {

GatedMlp GatedMlp::load(WeightLoader& w, const std::string& p, int64_t hidden, int64_t inter) {
  GatedMlp m;
  m.intermediate = inter;
  m.gate_up = Linear::load_merged(w, {p + ".gate_proj", p + ".up_proj"}, hidden, {inter, inter}, false);
  m.down = Linear::load(w, p + ".down_proj", inter, hidden, false);
  return m;
}

Tensor GatedMlp::forward(OpContext& ctx, const Tensor& x) const {
  const int64_t T = x.size(0);
  Tensor gu = gate_up.forward(ctx, x);
  Tensor act = ctx.act({T, intermediate});
  ops::silu_mul(ctx, act, gu.slice(1, 0, intermediate), gu.slice(1, intermediate, intermediate));
  return down.forward(ctx, act);
}

}  // namespace portllm
