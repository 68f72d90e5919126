#include "model/layers/normed_input.h"

#include <utility>

#include "ops/ops.h"

namespace portllm {

SublayerOut SublayerOut::last_projection(OpContext& ctx, const Linear& l, const Tensor& in) {
  if (!l.single_float_matrix()) return l.forward(ctx, in);
  SublayerOut o;
  o.proj = &l;
  o.proj_in = in;
  return o;
}

const Tensor& SublayerOut::evaluate(OpContext& ctx) {
  if (proj) {
    delta = proj->forward(ctx, proj_in);
    proj = nullptr;
    proj_in = Tensor();
  }
  return delta;
}

const Tensor& NormedInput::hidden(OpContext& ctx) {
  if (state_ == State::Pending && delta_.pending()) {  // the projection with the norm in its last block
    MatmulAddRmsNormArgs a;
    a.x = delta_.proj_in;
    a.w = delta_.proj->weight;
    a.bias = delta_.proj->bias;
    a.residual = residual_;
    a.norm_weight = weight_;
    a.eps = eps_;
    a.weight_offset = offset_;
    a.h = h_;
    if (ops::matmul_add_rms_norm(ctx, a)) {
      delta_ = SublayerOut();
      state_ = State::Done;
      return h_;
    }
  }
  if (state_ == State::Pending && delta_.defined())
    ops::add_rms_norm(ctx, residual_, h_, delta_.evaluate(ctx), weight_, eps_, offset_);
  else if (state_ != State::Done)  // the first layer's input, or a residual a fused GEMV advanced
    ops::rms_norm(ctx, h_, residual_, weight_, eps_, offset_);
  state_ = State::Done;
  return h_;
}

const Tensor& NormedInput::residual(OpContext& ctx) {
  if (state_ == State::Pending) hidden(ctx);
  return residual_;
}

bool NormedInput::fused(OpContext& ctx, const Tensor& w, const Tensor& bias, const Tensor& y, bool gated,
                        bool keep_h) {
  if (state_ != State::Pending || !delta_.defined()) return false;
  AddRmsNormMatmulArgs a;
  a.residual = residual_;
  a.residual_out = spare_;
  a.norm_weight = weight_;
  a.eps = eps_;
  a.weight_offset = offset_;
  if (keep_h) a.h = h_;
  a.out = y;
  a.w = w;
  a.bias = bias;
  a.gated = gated;
  // A pending projection runs only if the fused kernel will take its output (else hidden() runs it
  // with the norm in its last block); an evaluated delta needs no such check here.
  if (delta_.pending() && !ops::has_fast_kernel(ctx, a.desc())) return false;
  a.x = delta_.evaluate(ctx);
  if (!ops::add_rms_norm_matmul(ctx, a)) return false;
  std::swap(residual_, spare_);
  state_ = keep_h ? State::Done : State::ResidualDone;
  return true;
}

void NormedInput::project(OpContext& ctx, const Linear& l, const Tensor& y, bool keep_h) {
  if (l.single_float_matrix() && fused(ctx, l.weight, l.bias, y, false, keep_h)) return;
  l.forward(ctx, y, hidden(ctx));
}

Tensor NormedInput::project(OpContext& ctx, const Linear& l, bool keep_h) {
  Tensor y = ctx.act({residual_.size(0), l.out});
  project(ctx, l, y, keep_h);
  return y;
}

void NormedInput::project(OpContext& ctx, const Tensor& w, const Tensor& y, bool keep_h) {
  if (fused(ctx, w, Tensor(), y, false, keep_h)) return;
  ops::matmul(ctx, y, hidden(ctx), w);
}

void NormedInput::project_silu_mul(OpContext& ctx, const Tensor& out, const Tensor& w) {
  if (fused(ctx, w, Tensor(), out, true, false)) return;
  ops::matmul_silu_mul(ctx, out, hidden(ctx), w);
}

}  // namespace portllm
