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

bool GatedMlp::plain_gate_up() const {
  return gate_up.single_float_matrix() && !gate_up.bias.defined();
}

Tensor GatedMlp::forward(OpContext& ctx, const Tensor& x) const {
  const int64_t T = x.size(0);
  Tensor act = ctx.act({T, intermediate});
  if (plain_gate_up()) {
    ops::matmul_silu_mul(ctx, act, x, gate_up.weight);
  } else {
    Tensor gu = gate_up.forward(ctx, x);
    ops::silu_mul(ctx, act, gu.slice(1, 0, intermediate), gu.slice(1, intermediate, intermediate));
  }
  return down.forward(ctx, act);
}

SublayerOut GatedMlp::forward(OpContext& ctx, NormedInput& x) const {
  if (!plain_gate_up()) return forward(ctx, x.hidden(ctx));
  Tensor act = ctx.act({x.rows(), intermediate});
  x.project_silu_mul(ctx, act, gate_up.weight);
  return SublayerOut::last_projection(ctx, down, act);
}

}  // namespace portllm
